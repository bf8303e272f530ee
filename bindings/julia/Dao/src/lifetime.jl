# Finalizers and waiting.
#
# Finalizers run at a garbage collection, on whatever thread collected, in the
# middle of any code. So a finalizer here:
# - never waits for a lock: it tries `lock` and, when the lock is taken (also
#   by the very code it interrupted), registers itself again for a later
#   collection (the pattern Base documents for finalizers);
# - waits while its object still has live dependents (registers itself again);
# - makes only C calls that the headers allow from any thread: destroying an
#   object nobody else can reach, freeing or releasing what it owned;
# - does nothing once Julia is exiting (the process gives everything back).
#
# Waiting for host functions in mode=:task. Such a function runs in a Julia
# task started from libuv's event loop, which runs on Julia's thread 1 when
# that thread is idle or yields. A call that blocks thread 1 in C until the
# function has run would wait for ever; so every high-level call that may
# wait for stream work first yields until no such function is pending
# (`_pump_until`), then makes the (GC-safe) C call.

const _EXITING = Ref(false)

# Host functions in mode=:task, on every stream, that have not run yet.
const _TASK_PENDING = Threads.Atomic{Int}(0)

function _locked_or_retry(f, fin, obj, lk::ReentrantLock)
    if islocked(lk) || !trylock(lk)
        finalizer(fin, obj)
        return false
    end
    try
        f()
    finally
        unlock(lk)
    end
    return true
end

function _retry_finalizer(fin, obj)
    finalizer(fin, obj)
    return nothing
end

# Yield (and then sleep in 1 ms steps) until done() holds, so that the event
# loop and other tasks run meanwhile.
function _pump_until(done)
    done() && return nothing
    spins = 0
    while !done()
        spins < 100 ? yield() : sleep(0.001)
        spins += 1
    end
    return nothing
end

_wait_task_hostfuncs() = _pump_until(() -> _TASK_PENDING[] == 0)
