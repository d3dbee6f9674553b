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
# Server-side objects.  csv.c, gp.c, policy.c, mixture.c, mixlearn.c, costmodel.c, decision.c, refit.c,
# placement.c and replay.c are plain C shared with the executables below;
# src/sql_*.c hold the SQL-callable C functions, one file per job.
OBJS = src/easeml.o src/shmem.o src/scheduler.o src/catalog.o \
	src/catalog_runs.o src/supervisor.o src/rundir.o src/retention.o src/history.o src/csv.o src/gp.o \
	src/policy.o src/mixture.o src/mixlearn.o src/mixplan.o src/costmodel.o src/memmodel.o src/decision.o src/refit.o \
	src/autopolicy.o src/replay.o \
	src/liveworld.o src/policy_choice.o \
	src/devices.o src/placement.o \
	src/sql_status.o src/sql_tenant.o src/sql_trainer.o src/sql_replay.o \
	src/sql_model.o src/sql_source.o src/sql_device.o src/snapshot.o \
	src/sql_explain.o src/sql_cost.o src/sql_deploy.o src/sql_runlog.o \
	src/launcher.o src/launch_slurm.o src/slurm_parse.o src/trainer_jobs.o \
	src/sql_trainer_token.o src/identity.o \
	src/sql_predict.o src/predict_cache.o src/predict_conv.o src/predict_stats.o $(PREDICT_OBJS)
# the predict module the trainer scores with (plain C, no CUDA): easeml.so
# links the same code (docs/predict.md)
PREDICT_OBJS = src/encode.o src/trainer/tr_artifact.o src/trainer/tr_predict.o \
	src/trainer/tr_predict_linear.o src/trainer/tr_predict_net.o \
	src/trainer/tr_predict_tree.o

# sql/easeml.sql is the install script of the current version; earlier
# versions' install scripts are kept as released, and each upgrade script is
# built from one file per topic under sql/upgrade/<from>--<to>/.
UPGRADE_PARTS = $(sort $(wildcard sql/upgrade/0.1.0--0.2.0/*.sql))
DATA_built = sql/easeml--$(EXTVERSION).sql sql/easeml--0.1.0--0.2.0.sql
DATA = sql/easeml--0.1.0.sql scripts/history/easeml_seed_history.csv

REGRESS = install declare tenancy admin history replay bad_input attacks devices data explain predict results slurm retention alter
REGRESS_OPTS = --load-extension=easeml

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
$(OBJS): $(wildcard src/*.h) src/trainer/tr_predict.h src/trainer/tr_artifact.h

# ---- plain C executables (no server headers) --------------------------------
CORE_CFLAGS = -O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
	-std=gnu11 -Isrc -I/usr/include/json-c -D_GNU_SOURCE
CORE_LIBS = -lopenblas -llapacke -lm

CORE_SRCS = src/csv.c src/gp.c src/policy.c src/mixture.c src/mixlearn.c src/mixplan.c src/costmodel.c src/memmodel.c \
	src/decision.c src/refit.c \
	src/autopolicy.c src/replay.c \
	src/placement.c src/slurm_parse.c
CORE_HDRS = $(wildcard src/*.h)

# the trainer reads CSV with the shared reader (src/csv.c); src/encode.c
# holds the column encoders the trainer fits and predict applies
TRAINER_SRCS = $(wildcard src/trainer/*.c) src/csv.c src/encode.c
TRAINER_HDRS = $(wildcard src/trainer/*.h) src/csv.h src/encode.h src/sortutil.h
# the trainer looks for the CUDA backend next to itself, then here
TRAINER_CFLAGS = -DTR_GPU_LIBDIR='"$(pkglibdir)"'
PQ_INCLUDE = -I$(shell $(PG_CONFIG) --includedir)
PQ_LIBDIR = -L$(shell $(PG_CONFIG) --libdir)

# the allocators are wrapped so that one the memory cap refuses is noted
# (src/trainer/tr_memory.c; the wrappers are in tr_main.c)
TRAINER_WRAP = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc

easeml-trainer: $(TRAINER_SRCS) $(TRAINER_HDRS) src/trainer_protocol.h
	$(CC) $(CORE_CFLAGS) $(TRAINER_CFLAGS) $(PQ_INCLUDE) -o $@ $(TRAINER_SRCS) $(PQ_LIBDIR) -lpq -ljson-c $(CORE_LIBS) -lpthread -ldl $(TRAINER_WRAP)

easeml-replay: src/replay_main.c $(CORE_SRCS) $(CORE_HDRS)
	$(CC) $(CORE_CFLAGS) -o $@ src/replay_main.c $(CORE_SRCS) $(CORE_LIBS)

# the live worker's decision code on the bench-decision problem
easeml-decision-bench: src/decision_bench.c $(CORE_SRCS) $(CORE_HDRS)
	$(CC) $(CORE_CFLAGS) -o $@ src/decision_bench.c $(CORE_SRCS) $(CORE_LIBS)

# the unit tests of the core, one file per module (src/test/test.h)
UNITTEST_SRCS = $(wildcard src/test/*.c)
easeml-unittest: $(UNITTEST_SRCS) src/test/test.h $(CORE_SRCS) $(CORE_HDRS)
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

easeml-trainer-test: $(TRAINER_TEST_SRCS) $(TRAINER_HDRS) src/trainer/test/tr_test.h src/trainer_protocol.h
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

easeml-cuda.so: src/trainer/cuda/tr_cuda.cu src/trainer/tr_gpu.h src/trainer/tr_gpu_kernels.h
	$(NVCC) -O3 -std=c++17 -Xcompiler -fPIC,-fvisibility=hidden $(CUDA_GENCODE) \
		-Isrc -Isrc/trainer -shared -cudart static -o $@ $< \
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

easeml-device-test: $(DEVICE_TEST_SRCS) $(TRAINER_HDRS) src/trainer_protocol.h
	$(CC) $(CORE_CFLAGS) $(TRAINER_CFLAGS) -Isrc/trainer $(PQ_INCLUDE) -o $@ $(DEVICE_TEST_SRCS) $(PQ_LIBDIR) -lpq -ljson-c $(CORE_LIBS) -lpthread -ldl

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

easeml-fuzz-artifact: $(FUZZ_SRCS) $(TRAINER_HDRS) src/trainer_protocol.h
	$(CC) $(CORE_CFLAGS) -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-fno-omit-frame-pointer -DFUZZ_MAIN $(TRAINER_CFLAGS) $(PQ_INCLUDE) -o $@ $(FUZZ_SRCS) \
		$(PQ_LIBDIR) -lpq -ljson-c $(CORE_LIBS) -lpthread -ldl

.PHONY: fuzz-artifact
fuzz-artifact: easeml-fuzz-artifact
	OPENBLAS_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 ./easeml-fuzz-artifact
