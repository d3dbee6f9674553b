# easeml: PGXS build of the extension, the trainer and the replay simulator.
#
#   make && make install                 build and install (PG_CONFIG selects the server)
#   make unittest                        GP/policy/trainer unit tests, no PostgreSQL needed
#   make unittest TEST="TestCsv ..."     only the named tests (./easeml-unittest --list)
#   make installcheck                    pg_regress (needs a running server, see scripts/test.sh)
#   make tapcheck                        TAP tests (run as the postgres OS user, see scripts/test.sh)
#
# "make check" is a no-op for PGXS on PostgreSQL 15 and exits 0: never use it.

EXTENSION  = easeml
EXTVERSION = 0.2.0

MODULE_big = easeml
# Server-side objects, one folder per layer (docs/architecture.md):
#   src/module   _PG_init, GUCs, shared memory, the one role-switching module
#   src/worker   the background worker: scheduling loop, catalog I/O,
#                trainer supervision, launchers, retention
#   src/sql      the SQL-callable C functions (sql_*.c, one file per job)
#   src/core     plain C shared with the executables below (no server headers)
MODULE_OBJS = src/module/easeml.o src/module/shmem.o src/module/identity.o \
	src/module/caller.o src/module/launcher_settings.o \
	src/module/trainer_session.o src/module/predict_stats.o \
	src/module/rundir_setting.o
WORKER_OBJS = src/worker/scheduler.o src/worker/results.o src/worker/stops.o \
	src/worker/decide.o src/worker/launch.o src/worker/loop_state.o src/worker/catalog.o \
	src/worker/catalog_load.o src/worker/catalog_runs.o \
	src/worker/catalog_claim.o src/worker/catalog_record.o \
	src/worker/catalog_devices.o src/worker/supervisor.o src/worker/rundir.o \
	src/worker/retention.o src/worker/liveworld.o src/worker/policy_choice.o \
	src/worker/devices.o src/worker/launch_slurm.o src/worker/trainer_jobs.o \
	src/worker/recovery.o
SQL_OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/sql/sql_*.c)))
CORE_OBJS = $(patsubst %.c,%.o,$(CORE_SRCS))
OBJS = $(MODULE_OBJS) $(WORKER_OBJS) $(SQL_OBJS) $(CORE_OBJS) $(PREDICT_OBJS)
# the predict module the trainer scores with (plain C, no CUDA): easeml.so
# links the same code (docs/predict.md)
PREDICT_OBJS = src/core/encode.o src/trainer/predict/tr_artifact.o \
	src/trainer/predict/tr_predict.o src/trainer/predict/tr_predict_linear.o \
	src/trainer/predict/tr_predict_net.o src/trainer/predict/tr_predict_tree.o \
	src/trainer/predict/tr_predict_ensemble.o

# The PostgreSQL-free core: the GP, the policies, the cost and memory models,
# the replay simulator.  The live worker, easeml-replay and the unit tests
# link the same files.
CORE_SRCS = src/core/csv.c src/core/gp.c src/core/gp_fit.c \
	src/core/gp_loglik.c src/core/gp_posterior.c src/core/policy_spec.c \
	src/core/policy_acq.c src/core/policy_pick.c src/core/policy_index.c \
	src/core/policy_explore.c \
	src/core/sizecost.c src/core/mixture.c \
	src/core/mixlearn.c src/core/costmodel.c \
	src/core/memmodel.c $(DECISION_SRCS) src/core/refit.c \
	src/core/autopolicy.c $(REPLAY_CORE_SRCS) src/core/placement.c \
	src/core/slurm_parse.c src/core/hpspace.c
# the decision world (src/core/decision.h; decision_internal.h lists the jobs)
DECISION_SRCS = src/core/decision_world.c src/core/decision_cost.c \
	src/core/decision_events.c src/core/decision_view.c src/core/decision_pick.c
# the replay simulator (src/core/replay.h; replay_internal.h lists the jobs)
REPLAY_CORE_SRCS = src/core/replay_matrix.c src/core/replay_config.c \
	src/core/replay_sim.c src/core/replay_output.c src/core/replay_job.c \
	src/core/replay_auto.c
CORE_HDRS = $(wildcard src/core/*.h)

# sql/easeml.sql is the install script of the current version; earlier
# versions' install scripts are kept as released, and each upgrade script is
# built from one file per topic under sql/upgrade/<from>--<to>/.
UPGRADE_PARTS = $(sort $(wildcard sql/upgrade/0.1.0--0.2.0/*.sql))
DATA_built = sql/easeml--$(EXTVERSION).sql sql/easeml--0.1.0--0.2.0.sql
DATA = sql/easeml--0.1.0.sql scripts/history/easeml_seed_history.csv

REGRESS = helpers install declare tenancy admin history replay bad_input attacks devices data explain predict results slurm retention alter budget spaces ensemble
# pg_regress reads test/sql/ and test/expected/ (a link to the top-level
# expected/: PostgreSQL 15's pg_regress has no --expecteddir)
REGRESS_OPTS = --inputdir=test --load-extension=easeml

SCRIPTS_built = easeml-trainer easeml-replay
EXTRA_CLEAN = easeml-unittest easeml-decision-bench $(DATA_built) results regression.diffs regression.out tmp_check

PG_CONFIG ?= pg_config
PG_CPPFLAGS += -Isrc -DEASEML_VERSION='"$(EXTVERSION)"'
SHLIB_LINK += -lopenblas -llapacke

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

sql/easeml--$(EXTVERSION).sql: sql/easeml.sql
	cp $< $@

sql/easeml--0.1.0--0.2.0.sql: $(UPGRADE_PARTS)
	cat $^ > $@

# PGXS does not track header dependencies: rebuild every object when a
# header changes (a stale object with an old struct layout is a silent bug)
$(OBJS): $(wildcard src/*/*.h) $(wildcard src/trainer/predict/*.h)

# ---- plain C executables (no server headers) --------------------------------
CORE_CFLAGS = -O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
	-std=gnu11 -Isrc -I/usr/include/json-c -D_GNU_SOURCE
CORE_LIBS = -lopenblas -llapacke -lm

# the trainer: its driver at src/trainer/, the model families, the predict
# module, the GPU backends and the data readers in folders below it; it reads
# CSV with the core's reader and fits the core's column encoders
TRAINER_DIRS = src/trainer src/trainer/families src/trainer/predict \
	src/trainer/gpu src/trainer/io
TRAINER_SRCS = $(foreach d,$(TRAINER_DIRS),$(wildcard $(d)/*.c)) src/core/csv.c src/core/encode.c
TRAINER_HDRS = $(foreach d,$(TRAINER_DIRS),$(wildcard $(d)/*.h)) src/core/csv.h \
	src/core/encode.h src/core/sortutil.h
# the trainer looks for the CUDA backend next to itself, then here
TRAINER_CFLAGS = -DTR_GPU_LIBDIR='"$(pkglibdir)"'
PQ_INCLUDE = -I$(shell $(PG_CONFIG) --includedir)
PQ_LIBDIR = -L$(shell $(PG_CONFIG) --libdir)

# the allocators are wrapped so that one the memory cap refuses is noted
# (src/trainer/tr_memory.c; the wrappers are in tr_main.c)
TRAINER_WRAP = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc

easeml-trainer: $(TRAINER_SRCS) $(TRAINER_HDRS) src/core/trainer_protocol.h
	$(CC) $(CORE_CFLAGS) $(TRAINER_CFLAGS) $(PQ_INCLUDE) -o $@ $(TRAINER_SRCS) $(PQ_LIBDIR) -lpq -ljson-c $(CORE_LIBS) -lpthread -ldl $(TRAINER_WRAP)

# easeml-replay's command line (src/tools/replay_cli.h lists the files)
REPLAY_TOOL_SRCS = src/tools/replay_main.c src/tools/replay_args.c \
	src/tools/replay_report.c src/tools/replay_bench_decision.c
easeml-replay: $(REPLAY_TOOL_SRCS) src/tools/replay_cli.h $(CORE_SRCS) $(CORE_HDRS)
	$(CC) $(CORE_CFLAGS) -o $@ $(REPLAY_TOOL_SRCS) $(CORE_SRCS) $(CORE_LIBS)

# the live worker's decision code on the bench-decision problem
easeml-decision-bench: src/tools/decision_bench.c $(CORE_SRCS) $(CORE_HDRS)
	$(CC) $(CORE_CFLAGS) -o $@ src/tools/decision_bench.c $(CORE_SRCS) $(CORE_LIBS)

# the unit tests of the core, one file per module (src/core/test/test.h)
UNITTEST_SRCS = $(wildcard src/core/test/*.c)
easeml-unittest: $(UNITTEST_SRCS) src/core/test/test.h $(CORE_SRCS) $(CORE_HDRS)
	$(CC) $(CORE_CFLAGS) -o $@ $(UNITTEST_SRCS) $(CORE_SRCS) $(CORE_LIBS)

all: $(SCRIPTS_built)

.PHONY: unittest tapcheck
unittest: easeml-unittest
	./easeml-unittest $(TEST)

# TAP tests: run as a non-root user on a tree it can write (scripts/test.sh).
tapcheck:
	rm -rf tmp_check
	TESTDIR='$(CURDIR)' PATH="$(bindir):$$PATH" PGPORT='6$(DEF_PGPORT)' \
	PG_REGRESS='$(top_builddir)/src/test/regress/pg_regress' \
	$(PROVE) $(PG_PROVE_FLAGS) $(PROVE_FLAGS) $(or $(PROVE_TESTS),t/*.pl)

# ---- trainer unit tests (owned by the trainer ML core) ----------------------
# easeml-trainer-test: every trainer source except tr_main.c, plus the tests
# in src/trainer/test/.  "make trainer-unittest" builds and runs it (TAP
# output; no PostgreSQL server needed, python3-sklearn's iris.csv is used
# when installed).
TRAINER_TEST_SRCS = $(filter-out src/trainer/tr_main.c,$(TRAINER_SRCS)) \
	$(wildcard src/trainer/test/*.c)
EXTRA_CLEAN += easeml-trainer-test

easeml-trainer-test: $(TRAINER_TEST_SRCS) $(TRAINER_HDRS) src/trainer/test/tr_test.h src/core/trainer_protocol.h
	$(CC) $(CORE_CFLAGS) $(TRAINER_CFLAGS) $(PQ_INCLUDE) -o $@ $(TRAINER_TEST_SRCS) $(PQ_LIBDIR) -lpq -ljson-c $(CORE_LIBS) -lpthread -ldl

.PHONY: trainer-unittest
trainer-unittest: easeml-trainer-test
	OPENBLAS_NUM_THREADS=1 ./easeml-trainer-test

# ---- GPU: the CUDA backend and the device checks ----------------------------
# Where nvcc exists (CUDA_HOME, default /usr/local/cuda) the CUDA backend is
# built as easeml-cuda.so: sm_90 code and compute_90 PTX for newer GPUs, the
# CUDA runtime linked in statically, cuBLAS found through an rpath.  The
# trainer loads it with dlopen(), so everything else builds, installs and
# runs without it; easeml.so never links CUDA.
CUDA_HOME ?= /usr/local/cuda
NVCC := $(wildcard $(CUDA_HOME)/bin/nvcc)
CUDA_GENCODE = -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
ifneq ($(NVCC),)
CUDA_TARGETS = easeml-cuda.so
endif
EXTRA_CLEAN += easeml-cuda.so easeml-device-test

easeml-cuda.so: src/trainer/gpu/tr_cuda.cu src/trainer/gpu/tr_gpu.h src/trainer/gpu/tr_gpu_kernels.h
	$(NVCC) -O3 -std=c++17 -Xcompiler -fPIC,-fvisibility=hidden $(CUDA_GENCODE) \
		-Isrc -shared -cudart static -o $@ $< \
		-L$(CUDA_HOME)/lib64 -lcublas -Xlinker -rpath,$(CUDA_HOME)/lib64

all: $(CUDA_TARGETS)

install: install-cuda
.PHONY: install-cuda
install-cuda: $(CUDA_TARGETS)
ifneq ($(NVCC),)
	$(INSTALL_SHLIB) easeml-cuda.so '$(DESTDIR)$(pkglibdir)/easeml-cuda.so'
endif

# easeml-device-test: every GPU kernel and GPU family against the CPU.
# "make device-test" runs it on the CPU emulation of a GPU;
# "./easeml-device-test --cuda" on the CUDA backend (scripts/gpu-check.sh).
DEVICE_TEST_SRCS = $(filter-out src/trainer/tr_main.c,$(TRAINER_SRCS)) \
	src/trainer/devtest/device_test.c

easeml-device-test: $(DEVICE_TEST_SRCS) $(TRAINER_HDRS) src/core/trainer_protocol.h
	$(CC) $(CORE_CFLAGS) $(TRAINER_CFLAGS) $(PQ_INCLUDE) -o $@ $(DEVICE_TEST_SRCS) $(PQ_LIBDIR) -lpq -ljson-c $(CORE_LIBS) -lpthread -ldl

.PHONY: device-test
device-test: easeml-device-test
	OPENBLAS_NUM_THREADS=1 ./easeml-device-test

# ---- fuzzing the artifact reader --------------------------------------------
# easeml-fuzz-artifact: real artifacts of every family mutated thousands of
# times and fed to the predict module (src/trainer/test/fuzz_artifact.c),
# built with AddressSanitizer and UBSan so that any overread aborts.
# EASEML_FUZZ_ITERS sets the mutations per artifact (default 5000).
FUZZ_SRCS = $(filter-out src/trainer/tr_main.c,$(TRAINER_SRCS)) src/trainer/test/fuzz_artifact.c
EXTRA_CLEAN += easeml-fuzz-artifact

easeml-fuzz-artifact: $(FUZZ_SRCS) $(TRAINER_HDRS) src/core/trainer_protocol.h
	$(CC) $(CORE_CFLAGS) -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-fno-omit-frame-pointer -DFUZZ_MAIN $(TRAINER_CFLAGS) $(PQ_INCLUDE) -o $@ $(FUZZ_SRCS) \
		$(PQ_LIBDIR) -lpq -ljson-c $(CORE_LIBS) -lpthread -ldl

.PHONY: fuzz-artifact
fuzz-artifact: easeml-fuzz-artifact
	OPENBLAS_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 ./easeml-fuzz-artifact
