/*-------------------------------------------------------------------------
 *
 * policy_choice.h
 *	  Recording the "auto" policy's choices (easeml.policy_choices).
 *
 * IDENTIFICATION
 *	  src/worker/policy_choice.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_POLICY_CHOICE_H
#define EASEML_POLICY_CHOICE_H

/*
 * Record the refit cycle's latest auto choice if it was not recorded yet.
 * Opens and commits its own transaction; errors propagate.
 */
extern void PolicyChoiceRecord(void);

#endif							/* EASEML_POLICY_CHOICE_H */
