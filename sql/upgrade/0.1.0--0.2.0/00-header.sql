/*
 * easeml 0.1.0 -> 0.2.0 upgrade.  Built by the Makefile by concatenating
 * the files of sql/upgrade/0.1.0--0.2.0/ in name order; each file holds
 * one topic's catalog changes, and sql/easeml.sql holds the same changes
 * for a fresh install (t/006_upgrade.pl checks that an upgraded catalog
 * equals a fresh one).
 */
\echo Use "ALTER EXTENSION easeml UPDATE TO '0.2.0'" to load this file. \quit
