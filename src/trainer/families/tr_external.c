/*-------------------------------------------------------------------------
 *
 * tr_external.c
 *	  Custom trainers: a candidate of family "external" is trained by a
 *	  command an admin registered (easeml.add_custom_model), under the
 *	  contract of docs/devices.md.
 *
 * The built-in trainer has already read the task's rows as the tenant; it
 * prepares them exactly as for a built-in family (the same seeded split,
 * imputation and standardisation, so scores are comparable) and starts
 * the command without a shell, in the run directory, in the trainer's own
 * process group (so a cancel or timeout stops both):
 *
 *	 stdin	 the data: one JSON header line (format "easeml-data-1", shapes,
 *			 class names, feature names, the candidate's params), then the
 *			 arrays it lists, raw little-endian: x_train float32 (n_train x
 *			 d), y_train int32 class ids or float64 targets, x_val, y_val;
 *	 stdout  JSON lines: {"epoch": E, "loss": L} for progress and a final
 *			 {"score": S, ...} (accuracy, or R^2 for regression, on x_val);
 *			 any other line is copied to the run's log;
 *	 stderr  copied to the run's log; its last line explains a failure;
 *	 env	 EASEML_DEVICE, EASEML_DEVICE_KIND, CUDA_VISIBLE_DEVICES,
 *			 EASEML_SEED, EASEML_TIME_LIMIT, EASEML_THREADS and
 *			 EASEML_ARTIFACT_PATH (where it may leave an artifact), plus
 *			 PATH, LC_ALL, HOME and PYTHONUNBUFFERED; never the database
 *			 connection string;
 *	 exit	 0 on success; 5 (EASEML_EXIT_DEVICE_OOM) when the device ran
 *			 out of memory; 7 (EASEML_EXIT_MEMORY_LIMIT) when an allocation
 *			 over the memory cap it inherits (RLIMIT_DATA) failed.
 *
 * The command line is the admin's array, nothing else: no value a tenant
 * wrote (task or column names, labels) reaches the command line or the
 * environment; they travel only on the data pipe.  An artifact the
 * command leaves is kept inside an EASEMLA1 artifact of family "external"
 * as one byte tensor, "blob".
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_external.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trainer/trainer.h"
#include "tr_external.h"
#include "core/trainer_protocol.h"

#define MAX_LINE (1024 * 1024)	/* longer output lines are cut */
#define MAX_ARTIFACT ((size_t) 1024 * 1024 * 1024)

/* The bytes to send on the command's stdin, in order. */
typedef struct Feed
{
	const char *part[6];
	size_t		len[6];
	int			n;
	int			cur;
	size_t		off;
} Feed;

/* A stream of the command's output cut into lines. */
typedef struct Lines
{
	int			fd;				/* -1 at end of file */
	char	   *buf;
	size_t		len;
	char		last[TR_ERRLEN];	/* last non-empty line (stderr) */
} Lines;

/* What the command said on stdout. */
typedef struct Said
{
	json_object *final;			/* the object with "score" */
	int			epoch;
	double		loss;
	char		error[TR_ERRLEN];
} Said;

/* The header line: what the arrays are and how to read them. */
static char *
Header(const TrData *data, char **feature_names, json_object *params, uint64_t seed)
{
	json_object *h = json_object_new_object();
	json_object *a = json_object_new_array();
	int			reg = data->kind == TR_KIND_REGRESSION;
	const char *names[4] = {"x_train", "y_train", "x_val", "y_val"};
	char	   *text;

	json_object_object_add(h, "format", json_object_new_string(EASEML_DATA_FORMAT));
	json_object_object_add(h, "kind", json_object_new_string(reg ? "regression" : "classification"));
	json_object_object_add(h, "n_train", json_object_new_int(data->n_train));
	json_object_object_add(h, "n_val", json_object_new_int(data->n_val));
	json_object_object_add(h, "n_features", json_object_new_int(data->d));
	json_object_object_add(h, "n_classes", json_object_new_int(reg ? 0 : data->n_classes));
	if (!reg)
	{
		json_object *c = json_object_new_array();

		for (int i = 0; i < data->n_classes; i++)
			json_object_array_add(c, json_object_new_string(data->class_names[i]));
		json_object_object_add(h, "classes", c);
	}
	if (data->channels > 0)
	{
		json_object *s = json_object_new_array();

		json_object_array_add(s, json_object_new_int(data->channels));
		json_object_array_add(s, json_object_new_int(data->height));
		json_object_array_add(s, json_object_new_int(data->width));
		json_object_object_add(h, "input_shape", s);
	}
	if (feature_names != NULL)
	{
		json_object *f = json_object_new_array();

		for (int j = 0; j < data->d; j++)
			json_object_array_add(f, json_object_new_string(feature_names[j] ? feature_names[j] : ""));
		json_object_object_add(h, "features", f);
	}
	json_object_object_add(h, "seed", json_object_new_uint64(seed));
	json_object_object_add(h, "params", params ? json_object_get(params) : json_object_new_object());
	for (int i = 0; i < 4; i++)
	{
		json_object *e = json_object_new_object();
		json_object *shape = json_object_new_array();
		int			rows = i < 2 ? data->n_train : data->n_val;
		int			x = i % 2 == 0;

		json_object_object_add(e, "name", json_object_new_string(names[i]));
		json_object_object_add(e, "dtype", json_object_new_string(
									x ? "float32" : (reg ? "float64" : "int32")));
		json_object_array_add(shape, json_object_new_int(rows));
		if (x)
			json_object_array_add(shape, json_object_new_int(data->d));
		json_object_object_add(e, "shape", shape);
		json_object_array_add(a, e);
	}
	json_object_object_add(h, "arrays", a);
	text = strdup(json_object_to_json_string_ext(h, JSON_C_TO_STRING_PLAIN));
	json_object_put(h);
	return text;
}

/* "NAME=value" in malloc'd memory. */
static char *
EnvVar(const char *name, const char *value)
{
	size_t		len = strlen(name) + strlen(value) + 2;
	char	   *s = malloc(len);

	if (s)
		snprintf(s, len, "%s=%s", name, value);
	return s;
}

/* The command's environment (see the file's comment); NULL-terminated. */
static char **
CommandEnv(const TrExternalRun *run)
{
	char	  **env = calloc(24, sizeof(char *));
	int			n = 0;
	char		num[32];
	const char *v;

	if (env == NULL)
		return NULL;
	v = getenv(EASEML_ENV_DEVICE);
	env[n++] = EnvVar(EASEML_ENV_DEVICE, v ? v : EASEML_KIND_CPU);
	v = getenv(EASEML_ENV_DEVICE_KIND);
	env[n++] = EnvVar(EASEML_ENV_DEVICE_KIND, v ? v : EASEML_KIND_CPU);
	/* unset means every GPU: a command on the CPU must see none */
	v = getenv(EASEML_ENV_CUDA_VISIBLE);
	env[n++] = EnvVar(EASEML_ENV_CUDA_VISIBLE, v ? v : "");
	snprintf(num, sizeof(num), "%llu", (unsigned long long) run->seed);
	env[n++] = EnvVar(EASEML_ENV_SEED, num);
	v = getenv(EASEML_ENV_TIME_LIMIT);
	env[n++] = EnvVar(EASEML_ENV_TIME_LIMIT, v ? v : "0");
	snprintf(num, sizeof(num), "%d", run->threads > 0 ? run->threads : 1);
	env[n++] = EnvVar(EASEML_ENV_THREADS, num);
	env[n++] = EnvVar("OMP_NUM_THREADS", num);
	env[n++] = EnvVar("OPENBLAS_NUM_THREADS", num);
	env[n++] = EnvVar("MKL_NUM_THREADS", num);
	env[n++] = EnvVar(EASEML_ENV_ARTIFACT, run->artifact_path);
	env[n++] = EnvVar("PATH", "/usr/local/bin:/usr/bin:/bin");
	env[n++] = EnvVar("LC_ALL", "C");
	env[n++] = EnvVar("PYTHONUNBUFFERED", "1");
	if ((v = getenv("HOME")) != NULL)
		env[n++] = EnvVar("HOME", v);
	if ((v = getenv("TZ")) != NULL)
		env[n++] = EnvVar("TZ", v);
	env[n] = NULL;
	for (int i = 0; i < n; i++)
		if (env[i] == NULL)
		{
			for (int j = 0; j < n; j++)
				free(env[j]);
			free(env);
			return NULL;
		}
	return env;
}

static void
FreeEnv(char **env)
{
	for (int i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

/*
 * Start the command with pipes on stdin, stdout and stderr; our ends are
 * non-blocking and close on exec.  Returns its pid, or -1 with err set.
 */
static pid_t
Spawn(char *const *command, char **env, const char *dir, int fds[3],
	  char *err, size_t errlen)
{
	int			in[2] = {-1, -1},
				out[2] = {-1, -1},
				errp[2] = {-1, -1};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t	defaults,
				none;
	pid_t		pid = -1;
	int			rc;

	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
		pipe2(errp, O_CLOEXEC) != 0)
	{
		snprintf(err, errlen, "could not create pipes for the custom trainer: %s",
				 strerror(errno));
		goto fail;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, errp[1], STDERR_FILENO);
	posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1);
	if (dir != NULL)
		posix_spawn_file_actions_addchdir_np(&fa, dir);
	sigemptyset(&none);
	sigfillset(&defaults);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &defaults);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawn(&pid, command[0], &fa, &attr, command, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc != 0)
	{
		snprintf(err, errlen, "could not start the custom trainer \"%s\": %s",
				 command[0], strerror(rc));
		pid = -1;
		goto fail;
	}
	close(in[0]);
	close(out[1]);
	close(errp[1]);
	fds[0] = in[1];
	fds[1] = out[0];
	fds[2] = errp[0];
	for (int i = 0; i < 3; i++)
		(void) fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
	return pid;

fail:
	for (int i = 0; i < 2; i++)
	{
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	return -1;
}

/* Write what the pipe takes; close it when all is sent or the reader left. */
static void
FeedMore(Feed *f, int *fd)
{
	while (f->cur < f->n)
	{
		ssize_t		w = write(*fd, f->part[f->cur] + f->off, f->len[f->cur] - f->off);

		if (w < 0)
		{
			if (errno == EAGAIN || errno == EINTR)
				return;
			break;				/* EPIPE: the command stopped reading */
		}
		f->off += w;
		if (f->off == f->len[f->cur])
		{
			f->cur++;
			f->off = 0;
		}
	}
	close(*fd);
	*fd = -1;
}

/* A line of the command's stdout: progress, the result, or log text. */
static void
StdoutLine(char *line, Said *said, const TrExternalRun *run)
{
	json_object *o = line[0] == '{' ? json_tokener_parse(line) : NULL;
	json_object *v;

	if (o == NULL || !json_object_is_type(o, json_type_object))
	{
		printf("custom trainer: %s\n", line);
		json_object_put(o);
		return;
	}
	if (json_object_object_get_ex(o, "error", &v) && json_object_is_type(v, json_type_string))
		snprintf(said->error, sizeof(said->error), "%s", json_object_get_string(v));
	if (json_object_object_get_ex(o, "score", &v))
	{
		json_object_put(said->final);
		said->final = o;
		return;
	}
	if (json_object_object_get_ex(o, "epoch", &v) &&
		(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
	{
		json_object *l;

		said->epoch = json_object_get_int(v);
		said->loss = json_object_object_get_ex(o, "loss", &l) &&
			(json_object_is_type(l, json_type_int) || json_object_is_type(l, json_type_double)) ?
			json_object_get_double(l) : NAN;
		if (run->progress)
			run->progress(run->progress_arg, said->epoch, said->loss);
	}
	json_object_put(o);
}

/* Read what is there; hand each complete line on.  is_err: stderr. */
static void
ReadLines(Lines *l, int is_err, Said *said, const TrExternalRun *run)
{
	char		chunk[65536];

	for (;;)
	{
		ssize_t		r = read(l->fd, chunk, sizeof(chunk));
		char	   *nl;

		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (r <= 0)
		{
			close(l->fd);
			l->fd = -1;
			r = 0;
			if (l->len == 0)
				return;
			chunk[r++] = '\n';	/* the last line had no newline */
		}
		if (l->len + r > MAX_LINE)
			l->len = 0;			/* drop an endless line */
		memcpy(l->buf + l->len, chunk, r);
		l->len += r;
		while ((nl = memchr(l->buf, '\n', l->len)) != NULL)
		{
			size_t		n = nl - l->buf;

			*nl = '\0';
			if (n > 0 && l->buf[n - 1] == '\r')
				l->buf[n - 1] = '\0';
			if (is_err)
			{
				printf("custom trainer: %s\n", l->buf);
				if (l->buf[0] != '\0')
					snprintf(l->last, sizeof(l->last), "%s", l->buf);
			}
			else
				StdoutLine(l->buf, said, run);
			memmove(l->buf, nl + 1, l->len - n - 1);
			l->len -= n + 1;
		}
		if (l->fd < 0)
			return;
	}
}

/*
 * Feed the data and read the command's output until it closes both, then
 * reap it.  A cancel (SIGTERM to the trainer) is passed on to the command;
 * if it is still running run->grace_ms later it gets SIGKILL, with its
 * process group when run->kill_group says so (the trainer's, the trainer
 * included).  A command that ignores SIGTERM would otherwise keep the
 * trainer, and itself, running for ever when nobody else kills them: the
 * scheduler died, and its SIGTERM came from PR_SET_PDEATHSIG.
 * Returns its wait status.
 */
static int
Converse(pid_t pid, int fds[3], Feed *feed, Lines *out, Lines *err, Said *said,
		 const TrExternalRun *run)
{
	int			status = 0;
	int			term_sent = 0;
	int			kill_sent = 0;
	double		term_at = 0;
	int			grace_ms = run->grace_ms >= 0 ? run->grace_ms : TR_EXTERNAL_GRACE_MS;

	out->fd = fds[1];
	err->fd = fds[2];
	while (out->fd >= 0 || err->fd >= 0)
	{
		struct pollfd p[3];
		int			n = 0;

		if (fds[0] >= 0)
			p[n++] = (struct pollfd) {fds[0], POLLOUT, 0};
		if (out->fd >= 0)
			p[n++] = (struct pollfd) {out->fd, POLLIN, 0};
		if (err->fd >= 0)
			p[n++] = (struct pollfd) {err->fd, POLLIN, 0};
		if (poll(p, n, 200) < 0 && errno != EINTR)
			break;
		if (run->cancel && *run->cancel && !term_sent)
		{
			(void) kill(pid, SIGTERM);
			term_sent = 1;
			term_at = TrNow();
		}
		else if (term_sent && !kill_sent && (TrNow() - term_at) * 1000.0 >= grace_ms)
		{
			printf("custom trainer: still running %.1f s after SIGTERM; killing it%s\n",
				   grace_ms / 1000.0, run->kill_group ? ", its process group and this trainer" : "");
			fflush(stdout);
			kill_sent = 1;
			if (run->kill_group)
				(void) kill(0, SIGKILL);
			(void) kill(pid, SIGKILL);
		}
		/* its children may keep the pipes open: the command's end is enough */
		if (kill_sent && waitpid(pid, &status, WNOHANG) == pid)
		{
			for (Lines *l = out; l != NULL; l = l == out ? err : NULL)
				if (l->fd >= 0)
				{
					close(l->fd);
					l->fd = -1;
				}
			if (fds[0] >= 0)
				close(fds[0]);
			fflush(stdout);
			return status;
		}
		if (fds[0] >= 0)
			FeedMore(feed, &fds[0]);
		if (out->fd >= 0)
			ReadLines(out, 0, said, run);
		if (err->fd >= 0)
			ReadLines(err, 1, said, run);
	}
	if (fds[0] >= 0)
		close(fds[0]);
	fflush(stdout);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

/* Wrap the file the command left at artifact_path, if any, into res. */
static int
KeepArtifact(const TrExternalRun *run, const TrData *data, TrResult *res)
{
	FILE	   *f = fopen(run->artifact_path, "rb");
	struct stat st;
	unsigned char *blob;
	TrArtifact	art;
	int64_t		dims[1];

	if (f == NULL)
		return 0;
	if (fstat(fileno(f), &st) != 0 || st.st_size <= 0 || (size_t) st.st_size > MAX_ARTIFACT)
	{
		printf("custom trainer: its artifact (%lld bytes) is not kept\n", (long long) st.st_size);
		fclose(f);
		return 0;
	}
	blob = malloc(st.st_size);
	if (blob == NULL || fread(blob, 1, st.st_size, f) != (size_t) st.st_size)
	{
		free(blob);
		fclose(f);
		TrSetError(res, "could not read the custom trainer's artifact \"%s\"", run->artifact_path);
		return -1;
	}
	fclose(f);
	TrArtifactBegin(&art, EASEML_FAMILY_EXTERNAL, data);
	dims[0] = st.st_size;
	TrArtifactAdd(&art, "blob", TR_DT_U8, 1, dims, blob);
	free(blob);
	return TrArtifactFinish(&art, res);
}

/* How the command ended, as the run's result; 0 on success. */
static int
Outcome(int status, Said *said, Lines *err, const TrExternalRun *run, TrResult *res)
{
	json_object *v;
	const char *why = said->error[0] ? said->error : err->last;

	if (run->cancel && *run->cancel)
	{
		TrSetError(res, "cancelled");
		return -1;
	}
	if (status == -1 || WIFSIGNALED(status))
	{
		TrSetError(res, "the custom trainer was terminated by signal %d%s%s",
				   status == -1 ? 0 : WTERMSIG(status), why[0] ? ": " : "", why);
		return -1;
	}
	if (WEXITSTATUS(status) != 0)
	{
		if (WEXITSTATUS(status) == EASEML_EXIT_DEVICE_OOM)
			res->exit_code = EASEML_EXIT_DEVICE_OOM;
		/* it inherited the trainer's memory cap (tr_memory.c) */
		if (WEXITSTATUS(status) == EASEML_EXIT_MEMORY_LIMIT && TrMemoryLimit() > 0)
			res->exit_code = EASEML_EXIT_MEMORY_LIMIT;
		TrSetError(res, "the custom trainer exited with code %d%s%s",
				   WEXITSTATUS(status), why[0] ? ": " : "", why);
		return -1;
	}
	if (said->final == NULL || !json_object_object_get_ex(said->final, "score", &v) ||
		!(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
	{
		TrSetError(res, "the custom trainer reported no score (a JSON line {\"score\": ...} on stdout)");
		return -1;
	}
	res->score = json_object_get_double(v);
	if (!isfinite(res->score))
	{
		TrSetError(res, "the custom trainer reported a score that is not a finite number");
		return -1;
	}
	res->epochs = said->epoch;
	res->train_loss = said->loss;
	/* the result line may say how many epochs the fit took, when no progress line did */
	if (json_object_object_get_ex(said->final, "epochs", &v) && json_object_is_type(v, json_type_int) &&
		json_object_get_int(v) > 0)
		res->epochs = json_object_get_int(v);
	return 0;
}

/* The metrics object of a successful run. */
static json_object *
Metrics(const TrData *data, const TrExternalRun *run, const TrResult *res,
		json_object *final, double t_prep, double t_fit)
{
	json_object *m = json_object_new_object();

	json_object_object_add(m, "score", json_object_new_double(res->score));
	json_object_object_add(m, "family", json_object_new_string(EASEML_FAMILY_EXTERNAL));
	json_object_object_add(m, "kind", json_object_new_string(
									data->kind == TR_KIND_REGRESSION ? "regression" : "classification"));
	json_object_object_add(m, "train_seconds", json_object_new_double(t_fit));
	json_object_object_add(m, "prep_seconds", json_object_new_double(t_prep));
	json_object_object_add(m, "n_train", json_object_new_int(data->n_train));
	json_object_object_add(m, "n_val", json_object_new_int(data->n_val));
	json_object_object_add(m, "n_features", json_object_new_int(data->d));
	json_object_object_add(m, "n_classes", json_object_new_int(data->n_classes));
	json_object_object_add(m, "epochs", json_object_new_int(res->epochs));
	json_object_object_add(m, "train_loss", isfinite(res->train_loss) ?
						   json_object_new_double(res->train_loss) : NULL);
	json_object_object_add(m, "seed", json_object_new_uint64(run->seed));
	json_object_object_add(m, "artifact_bytes", json_object_new_int64((int64_t) res->artifact_len));
	/* everything the command reported, as it reported it */
	json_object_object_add(m, "custom", json_object_get(final));
	return m;
}

/* Run the command on prepared data: spawn, converse, judge. */
static int
RunCommand(const TrData *data, char **feature_names, const TrExternalRun *run,
		   TrResult *res, Said *said)
{
	char	  **env = CommandEnv(run);
	char	   *header = Header(data, feature_names, run->params, run->seed);
	int			reg = data->kind == TR_KIND_REGRESSION;
	int			fds[3];
	Feed		feed;
	Lines		out,
				err;
	pid_t		pid;
	int			status;
	struct sigaction ign,
				old;

	memset(&out, 0, sizeof(out));
	memset(&err, 0, sizeof(err));
	out.buf = malloc(MAX_LINE + 65536 + 1);
	err.buf = malloc(MAX_LINE + 65536 + 1);
	status = -1;
	if (env == NULL || header == NULL || out.buf == NULL || err.buf == NULL)
	{
		TrSetError(res, "out of memory starting the custom trainer");
		goto done;
	}
	(void) unlink(run->artifact_path);
	pid = Spawn(run->command, env, run->dir, fds, res->error, sizeof(res->error));
	if (pid < 0)
		goto done;
	memset(&feed, 0, sizeof(feed));
	feed.part[0] = header;
	feed.len[0] = strlen(header);
	feed.part[1] = "\n";
	feed.len[1] = 1;
	feed.part[2] = (const char *) data->Xtr;
	feed.len[2] = sizeof(float) * (size_t) data->n_train * data->d;
	feed.part[3] = reg ? (const char *) data->ttr : (const char *) data->ytr;
	feed.len[3] = (reg ? sizeof(double) : sizeof(int)) * (size_t) data->n_train;
	feed.part[4] = (const char *) data->Xva;
	feed.len[4] = sizeof(float) * (size_t) data->n_val * data->d;
	feed.part[5] = reg ? (const char *) data->tva : (const char *) data->yva;
	feed.len[5] = (reg ? sizeof(double) : sizeof(int)) * (size_t) data->n_val;
	feed.n = 6;

	/* a pipe the command closed must not kill the trainer */
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &old);
	status = Converse(pid, fds, &feed, &out, &err, said, run);
	sigaction(SIGPIPE, &old, NULL);
	status = Outcome(status, said, &err, run, res);

done:
	free(out.buf);
	free(err.buf);
	free(header);
	FreeEnv(env);
	return status;
}

/*
 * Train one candidate with the command of run (see the file's comment):
 * prepare the table as for a built-in family, run the command, keep its
 * artifact and build the metrics.  Returns 0, or -1 with res->error set
 * (res->exit_code says if the device ran out of memory).
 */
int
TrRunExternal(const TrTable *tab, const TrPrepOptions *opt,
			  const TrExternalRun *run, TrResult *res, json_object **metrics)
{
	TrData		data;
	Said		said;
	double		t0,
				t_prep,
				t_fit;
	int			rc;

	TrResultInit(res);
	*metrics = NULL;
	if (run->command == NULL || run->command[0] == NULL || run->command[0][0] != '/')
	{
		TrSetError(res, "the custom trainer's command must start with an absolute path");
		return -1;
	}
	if (run->cancel != NULL && *run->cancel)
	{
		TrSetError(res, "cancelled");
		return -1;
	}
	t0 = TrNow();
	if (TrPrepare(tab, opt, &data, res->error, sizeof(res->error)) != 0)
		return -1;
	t_prep = TrNow() - t0;

	memset(&said, 0, sizeof(said));
	said.loss = NAN;
	t0 = TrNow();
	rc = RunCommand(&data, tab->feature_names, run, res, &said);
	t_fit = TrNow() - t0;
	if (rc == 0)
		rc = KeepArtifact(run, &data, res);
	if (rc == 0)
	{
		*metrics = Metrics(&data, run, res, said.final, t_prep, t_fit);
		if (*metrics == NULL)
		{
			TrSetError(res, "out of memory building metrics");
			rc = -1;
		}
	}
	json_object_put(said.final);
	TrDataFree(&data);
	return rc;
}
