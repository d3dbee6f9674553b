
-- Declaring or refreshing a task profiles and copies every column of its
-- source in one query; on a wide table (Fashion-MNIST's 785 columns) LLVM
-- JIT spent over 15 minutes compiling that query.  Its cost is the
-- expressions, not the rows, so JIT never pays off here.
ALTER FUNCTION easeml._profile(regclass, text, text, text[], text[], boolean) SET jit = off;
ALTER FUNCTION easeml._take_snapshot() SET jit = off;
ALTER FUNCTION easeml.refresh(text) SET jit = off;
