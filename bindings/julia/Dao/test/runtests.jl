# Tests of the Julia binding of libdao, on every place of the machine: the
# CPU, two simulated devices and, where a driver and a GPU exist, CUDA (else
# CUDA must report no device cleanly).
#
# Run by bindings/julia/check.sh with DAO_LIBRARY=BUILD/libdao.so and
# DAO_SIM_DEVICES=2x64MiB set before the library is loaded; when run by hand
# the SIM devices are set here, before `using Dao`.
haskey(ENV, "DAO_SIM_DEVICES") || (ENV["DAO_SIM_DEVICES"] = "2x64MiB")

using Test
using Dao
using Dao: DAO_OK, DAO_ERR_INVALID_ARGUMENT, DAO_ERR_OUT_OF_MEMORY, DAO_ERR_INVALID_POINTER,
           DAO_ERR_UNSUPPORTED, DAO_ERR_NO_DEVICE, DAO_ERR_TIMEOUT, DAO_ERR_CLOSED,
           DAO_ERR_INVALID_STATE, DAO_ERR_BUSY, DAO_ERR_NOT_FOUND, DAO_PLACE_CPU, DAO_PLACE_CUDA,
           DAO_PLACE_CUDA_PINNED, DAO_PLACE_CUDA_MANAGED, DAO_PLACE_SIM

const KiB = 1 << 10
const MiB = 1 << 20

# Runs f, which must throw a DaoError with `status` and a message; returns it.
function expect_dao(f, status)
    err = try
        f()
        nothing
    catch e
        e
    end
    @test err isa DaoError
    err isa DaoError || return err
    @test err.status == status
    @test !isempty(err.message)
    @test occursin(Dao.status_name(status), sprint(showerror, err))
    return err
end

# Runs f, which must throw; returns the exception.
function thrown(f)
    try
        f()
    catch e
        return e
    end
    return nothing
end

fake_memory(ptr, bytes, place, allocator = nothing) =
    Dao.Block(Ptr{Cvoid}(UInt(ptr)), bytes, place, allocator, Stream[])

const PLACES = [cpu(), sim(0), sim(1)]

@testset "Dao.jl" begin

@testset "library, version, statuses" begin
    @test isfile(Dao.libdao)
    if haskey(ENV, "DAO_LIBRARY")
        @test Dao.locate_libdao() == abspath(ENV["DAO_LIBRARY"])
    end
    v = Dao.version()
    @test v isa VersionNumber && v.major == 0
    @test Dao.version_number() == v.major * 10000 + v.minor * 100 + v.patch
    @test Dao.status_string(DAO_OK) == "success"
    @test Dao.status_string(DAO_ERR_OUT_OF_MEMORY) == "out of memory"
    @test Dao.status_string(999) == "unknown status"
    @test Dao.status_name(DAO_ERR_BUSY) == "DAO_ERR_BUSY"
    @test Dao.status_name(999) == "status 999"  # unknown codes stay numbers
    e = DaoError(Cint(999), "from the future")
    @test occursin("status 999", sprint(showerror, e))
    # The low level: statuses as numbers, the message of the last failure.
    @test Dao.dao_free(cpu(), Ptr{Cvoid}(UInt(0x1000))) == DAO_ERR_INVALID_POINTER
    @test occursin("not a live allocation", Dao.last_error())
    @test unsafe_string(Dao.dao_place_kind_name(DAO_PLACE_SIM)) == "sim"
    @test Dao.dao_place_sim(1) == sim(1)
end

@testset "places" begin
    @test cpu() == Place(DAO_PLACE_CPU, 0)
    @test sim(1) == Place(DAO_PLACE_SIM, 1)
    @test cuda(2) == Place(DAO_PLACE_CUDA, 2)
    @test cuda_pinned() == Place(DAO_PLACE_CUDA_PINNED, 0)
    @test cuda_managed(1) == Place(DAO_PLACE_CUDA_MANAGED, 1)
    @test sprint(show, cpu()) == "cpu"
    @test sprint(show, sim(1)) == "sim:1"
    @test Dao.kind_name(DAO_PLACE_CUDA_MANAGED) == "cuda_managed"
    @test Dao.kind_name(42) == "unknown"
    @test host_visible(sim(0)) && host_visible(cpu()) && !host_visible(cuda(0))
    @test device_count(DAO_PLACE_CPU) == 1
    @test device_count(DAO_PLACE_SIM) == 2
    expect_dao(() -> device_count(9), DAO_ERR_INVALID_ARGUMENT)
    @test occursin("simulated", Dao.backend_description(DAO_PLACE_SIM))
    @test Dao.backend_description(99) == "unknown place kind"
    info1 = memory_info(sim(1))
    @test info1.total == 64 * MiB && 0 <= info1.free <= info1.total
    @test memory_info(cpu()).total > 0
    expect_dao(() -> memory_info(Place(DAO_PLACE_CPU, 1)), DAO_ERR_NO_DEVICE)
    expect_dao(() -> memory_info(sim(2)), DAO_ERR_NO_DEVICE)
    expect_dao(() -> memory_info(Place(Cint(7), 0)), DAO_ERR_INVALID_ARGUMENT)
    if !any(k -> startswith(k, "DAO_ALLOCATOR"), keys(ENV))
        @test Dao.default_config(DAO_PLACE_CPU).strategy == "buddy"
        @test Dao.default_config(DAO_PLACE_SIM).strategy == "caching"
    end
    expect_dao(() -> Dao.default_config(9), DAO_ERR_INVALID_ARGUMENT)
    # SIM devices are in use now: the same configuration is accepted, another not.
    sim_configure!([64 * MiB, 64 * MiB])
    expect_dao(() -> sim_configure!(3), DAO_ERR_INVALID_STATE)
    expect_dao(() -> sim_configure!(-1), DAO_ERR_INVALID_ARGUMENT)

    @testset "SIM cost profile and accounting" begin
        # In use with the default profile "none": calls counted, no time.
        @test sim_profile() == "none"
        sim_profile!("none")  # the profile in effect: accepted
        expect_dao(() -> sim_profile!("h200"), Dao.DAO_ERR_INVALID_STATE)
        e = expect_dao(() -> sim_profile!("tpu7"), DAO_ERR_INVALID_ARGUMENT)
        @test occursin("tpu7", e.message) && occursin("h200", e.message)
        expect_dao(() -> sim_profile!(""), DAO_ERR_INVALID_ARGUMENT)
        @test_throws ArgumentError sim_profile!("no\0ne")
        @test sim_profile() == "none"
        @test Dao.sim_op_name(:alloc) == "alloc"
        @test Dao.sim_op_name(Dao.DAO_SIM_OP_COPY_TO_DEVICE) == "copy_to_device"
        @test Dao.sim_op_name(Dao.DAO_SIM_OP_COUNT) == "unknown"
        for (name, op) in Dao._SIM_OPS
            @test Dao.sim_op_name(op) == String(name)
        end
        @test length(Dao._SIM_OPS) == Dao.DAO_SIM_OP_COUNT

        sim_reset_costs!(0)
        for op in 0:(Dao.DAO_SIM_OP_COUNT - 1)
            c = sim_cost(0, op)
            @test c isa Dao.SimCost
            @test (c.count, c.bytes, c.ns) == (0, 0, 0)
        end
        # A system allocator takes every block from the device: one segment
        # allocation of the block's bytes, then one free.
        a = Allocator(sim(0); strategy = "system")
        m = alloc(a, MiB)
        c = sim_cost(0, :alloc)
        @test c.count == 1 && c.bytes >= MiB
        @test c.ns == 0  # profile "none"
        @test c.struct_size == sizeof(Dao.SimCost)
        @test occursin("count", sprint(show, MIME"text/plain"(), c))
        free(m)
        f = sim_cost(0, Dao.DAO_SIM_OP_FREE)
        @test f.count == 1 && f.ns == 0
        destroy!(a)
        sim_cost(1, :alloc)
        sim_reset_costs!(0)
        @test sim_cost(0, :alloc).count == 0

        # Bad input: missing devices, unknown operations.
        for d in (2, -1, 64)
            expect_dao(() -> sim_cost(d, :alloc), DAO_ERR_NO_DEVICE)
            expect_dao(() -> sim_reset_costs!(d), DAO_ERR_NO_DEVICE)
        end
        e = expect_dao(() -> sim_cost(0, Dao.DAO_SIM_OP_COUNT), DAO_ERR_INVALID_ARGUMENT)
        @test occursin("operation", e.message)
        expect_dao(() -> sim_cost(0, -1), DAO_ERR_INVALID_ARGUMENT)
        @test_throws ArgumentError sim_cost(0, :teleport)
        @test_throws ArgumentError sim_cost(0, typemax(Int))
    end

    @testset "CUDA" begin
        n = device_count(DAO_PLACE_CUDA)
        @test n >= 0
        @test device_count(DAO_PLACE_CUDA_PINNED) == (n > 0 ? 1 : 0)
        if n == 0  # no driver or no GPU: a clean NO_DEVICE, saying why
            e = expect_dao(() -> alloc(cuda(0), 16), DAO_ERR_NO_DEVICE)
            @test occursin("cuda", e.message)
            expect_dao(() -> Stream(cuda(0)), DAO_ERR_NO_DEVICE)
            expect_dao(() -> Allocator(cuda(0)), DAO_ERR_NO_DEVICE)
            @test occursin("not available", Dao.backend_description(DAO_PLACE_CUDA))
        else
            m = alloc(cuda(0), 4096)
            @test UInt(pointer(m)) % 256 == 0
            @test_throws ArgumentError array(Float32, m)  # device memory is not host-visible
            host = collect(Float32, 1:1024)
            back = zeros(Float32, 1024)
            memcpy!(m, host)
            memcpy!(back, m)
            @test back == host
            free(m)
        end
    end
end

@testset "memory on $p" for p in PLACES
    before = used(p)
    m = alloc(p, 1000)
    @test m isa Block && m.bytes == 1000 && Dao.place(m) == p
    @test UInt(pointer(m)) % 256 == 0
    @test used(p) >= before + 1000
    @test usable_size(m) >= 1000
    # 1000 bytes = 125 Float64: a 5 × 25 column-major matrix.
    A = array(Float64, m, 5, 25)
    @test size(A) == (5, 25) && A isa HostArray{Float64,2}
    A .= reshape(1.0:125.0, 5, 25)
    @test sum(A) == sum(1:125)
    @test A[2, 1] == 2.0 && A[1, 2] == 6.0
    @test unsafe_load(Ptr{Float64}(pointer(m)), 6) == 6.0  # [1, 2] is element 6
    U = unsafe_array(Float64, m, 125)
    GC.@preserve m begin
        @test U == vec(A)
    end
    @test length(array(m)) == 1000 && eltype(array(m)) == UInt8
    @test length(array(Int32, m)) == 250
    @test_throws ArgumentError array(Float64, m, 200)  # more than the block holds
    @test_throws ArgumentError array(String, m, 1)     # not plain data
    free(m)
    @test Dao.isfreed(m)
    @test used(p) == before
    free(m)  # twice: nothing
    @test_throws ArgumentError array(Float64, m, 5)
    z = alloc(p, 0)
    @test pointer(z) == C_NULL
    free(z)
    expect_dao(() -> alloc(p, 1 << 50), DAO_ERR_OUT_OF_MEMORY)
    # A pointer this place never gave out.
    e = expect_dao(() -> free(fake_memory(0x1000, 16, p)), DAO_ERR_INVALID_POINTER)
    @test occursin("not a live allocation", e.message)

    h = HostArray{Int32}(undef, p, 4, 3)
    h .= 7
    @test sum(h) == 84 && size(h) == (4, 3) && sizeof(h) == 48
    h[end, end] = 1
    @test h[4, 3] == 1 && Dao.owner(h) isa Block
    @test UInt(pointer(h)) % 256 == 0
    @test similar(h) isa Array{Int32,2}

    # Copies on the default stream run at once.
    src = collect(1.0:10.0)
    mm = alloc(p, 80)
    memcpy!(mm, src)
    dst = zeros(10)
    memcpy!(dst, mm)
    @test dst == src
    @test_throws ArgumentError memcpy!(mm, zeros(20), 160)
    expect_dao(() -> memcpy!(pointer(mm) + 8, pointer(mm), 16), DAO_ERR_INVALID_ARGUMENT)  # overlap
    free(mm)
end

@testset "memory: bad places" begin
    expect_dao(() -> alloc(sim(5), 16), DAO_ERR_NO_DEVICE)
    expect_dao(() -> alloc(Place(Cint(9), 0), 16), DAO_ERR_INVALID_ARGUMENT)
    expect_dao(() -> used(sim(5)), DAO_ERR_NO_DEVICE)
    @test used_internal(cpu()) >= 0
    expect_dao(() -> used_internal(sim(5)), DAO_ERR_NO_DEVICE)
    @test_throws ArgumentError alloc(cpu(), -1)
    @test_throws ArgumentError array(Float32, fake_memory(256, 64, cuda(0)), 4)
end

@testset "row-major view of column-major memory" begin
    # A C program indexing a[r][c] (3 rows of 4) sees what Julia calls a 4 × 3
    # array: C's a[r][c] is Julia's A[c+1, r+1], at byte offset (r*4 + c)*8.
    A = HostArray{Float64}(undef, sim(0), 4, 3)
    GC.@preserve A for r in 0:2, c in 0:3
        unsafe_store!(pointer(A), 10r + c, r * 4 + c + 1)  # as C would write
    end
    @test all(A[c+1, r+1] == 10r + c for r in 0:2, c in 0:3)
    R = permutedims(A)  # the C (row-major) reading: R[r+1, c+1] == a[r][c]
    @test size(R) == (3, 4) && R[2, 4] == 13
end

@testset "allocators and statistics" begin
    a = Allocator(sim(0); strategy = "caching")
    ainfo = Dao.info(a)
    @test ainfo.place == sim(0) && ainfo.strategy == "caching"
    @test occursin("expandable_segments=true", ainfo.config)
    @test occursin("caching on sim:0", sprint(show, a))
    sizes = [1000, 5000, 1 * MiB]
    mems = [alloc(a, n) for n in sizes]
    free(mems[2])
    s = stats(a)
    @test s.struct_size == sizeof(AllocatorStats)
    @test s.alloc_count == 3
    @test s.free_count == 1
    @test s.live_blocks == 2
    @test s.requested_bytes == 1000 + 1 * MiB
    @test s.allocated_bytes >= s.requested_bytes
    @test s.reserved_bytes >= s.allocated_bytes
    @test s.peak_allocated_bytes >= s.allocated_bytes
    @test occursin("alloc_count", sprint(show, MIME"text/plain"(), s))
    blocks_stat = Dao.stat(a, :allocated_blocks)
    @test (blocks_stat.current, blocks_stat.peak, blocks_stat.allocated, blocks_stat.freed) == (2, 3, 3, 1)
    @test Dao.stat(a, Dao.DAO_STAT_REQUESTED_BYTES, :all).current == s.requested_bytes
    @test Dao.stat(a, :allocated_bytes, Dao.DAO_STAT_POOL_LARGE).current >= 0
    expect_dao(() -> Dao.stat(a, 99), DAO_ERR_INVALID_ARGUMENT)
    expect_dao(() -> Dao.stat(a, :allocated_bytes, 5), DAO_ERR_INVALID_ARGUMENT)
    @test_throws ArgumentError Dao.stat(a, :nope)
    Dao.reset_peak_stats!(a)
    s2 = stats(a)
    @test s2.peak_allocated_bytes == s2.allocated_bytes
    Dao.reset_accumulated_stats!(a)
    s3 = stats(a)
    @test s3.alloc_count == 0 && s3.free_count == 0 && s3.live_blocks == 2
    @test Dao.stat(a, :allocated_blocks).allocated == 0
    @test Dao.stat(a, :allocated_blocks).current == 2
    @test usable_size(mems[1]) >= 1000

    j = snapshot_json(a)
    @test startswith(j, "{") && endswith(j, "}")
    @test occursin("\"strategy\":\"caching\"", j) && occursin("\"place\":\"sim:0\"", j)

    snap = snapshot(a)
    segs = segments(snap)
    @test length(segs) == Dao.segment_count(snap) >= 1
    @test all(sg -> sg.struct_size == sizeof(SegmentInfo), segs)
    allocated = [b for i in eachindex(segs) for b in blocks(snap, i) if b.state == Dao.DAO_BLOCK_ALLOCATED]
    @test length(allocated) == 2
    @test Set(b.address for b in allocated) == Set(UInt(pointer(m)) for m in mems[[1, 3]])
    @test Set(b.requested_size for b in allocated) == Set([1000, 1 * MiB])
    @test all(b -> b.struct_size == sizeof(BlockInfo), allocated)
    expect_dao(() -> Dao.segment(snap, length(segs) + 1), DAO_ERR_INVALID_ARGUMENT)
    close(snap)
    @test_throws ArgumentError segments(snap)

    # An interior pointer, and destroying with live blocks.
    e = expect_dao(() -> free(fake_memory(UInt(pointer(mems[1])) + 8, 8, sim(0), a)),
                   DAO_ERR_INVALID_POINTER)
    @test occursin("not a live allocation", e.message)
    e = expect_dao(() -> destroy!(a), DAO_ERR_BUSY)
    @test occursin("still live", e.message)
    foreach(free, mems)
    @test stats(a).live_blocks == 0
    @test Dao.trim!(a) >= 0
    close(a)
    @test !isopen(a)
    close(a)  # twice: nothing
    @test_throws ArgumentError alloc(a, 16)

    e = expect_dao(() -> Allocator(cpu(); strategy = "nope"), DAO_ERR_INVALID_ARGUMENT)
    @test occursin("unknown strategy 'nope'", e.message)
    e = expect_dao(() -> Allocator(cpu(); strategy = "buddy", config = "bogus=1"), DAO_ERR_INVALID_ARGUMENT)
    @test occursin("bogus", e.message)
    expect_dao(() -> Allocator(cpu(); strategy = "buddy", config = "chunk_size=3MiB"), DAO_ERR_INVALID_ARGUMENT)
    expect_dao(() -> Allocator(sim(4); strategy = "caching"), DAO_ERR_NO_DEVICE)
    @test_throws ArgumentError Allocator(cpu(); strategy = "bu\0ddy")

    # buddy: counts, no snapshots.
    b = Allocator(cpu(); strategy = "buddy", config = "chunk_size=1MiB")
    bm = [alloc(b, 300) for _ in 1:4]
    sb = stats(b)
    @test (sb.alloc_count, sb.live_blocks, sb.requested_bytes) == (4, 4, 1200)
    @test Dao.stat(b, :allocated_bytes).current == sb.allocated_bytes
    expect_dao(() -> snapshot(b), DAO_ERR_UNSUPPORTED)
    expect_dao(() -> snapshot_json(b), DAO_ERR_UNSUPPORTED)
    h = HostArray{Float32}(undef, b, 16)
    h .= 2
    @test sum(h) == 32 && stats(b).live_blocks == 5
    free(Dao.owner(h))
    foreach(free, bm)
    @test stats(b).live_blocks == 0 && stats(b).free_count == 5
    @test Dao.trim!(b) >= 0
    destroy!(b)

    # The default allocator of a place belongs to libdao.
    pa = place_allocator(cpu())
    @test Dao.info(pa).place == cpu()
    e = expect_dao(() -> destroy!(pa), DAO_ERR_INVALID_ARGUMENT)
    @test occursin("cannot be destroyed", e.message)
    m = alloc(pa, 64)
    @test usable_size(m) >= 64
    free(m)
end

@testset "streams on $p" for p in PLACES
    s = Stream(p)
    @test Dao.place(s) == p && Dao.native(s) == C_NULL && isidle(s) && isopen(s)
    @test occursin("Dao.Stream", sprint(show, s))

    # Host functions run in stream order, in both modes.
    order = Int[]
    for i in 1:20
        launch_host_func(() -> push!(order, i), s)
    end
    synchronize(s)
    @test order == 1:20
    slots = zeros(Int, 10)
    slot = Threads.Atomic{Int}(0)
    for i in 1:10
        launch_host_func(s; mode = :thread) do
            slots[Threads.atomic_add!(slot, 1)+1] = i
        end
    end
    synchronize(s)
    @test slots == 1:10

    # Copies and host functions share the order: a slow function that writes
    # the block runs before the copy queued after it.
    n = 1000
    src = rand(n)
    m = alloc(p, 8n)
    dst = zeros(n)
    seen = Ref(0.0)
    memcpy!(m, src; stream = s)
    launch_host_func(s) do  # (on a CPU stream it runs at once, inside this call: no sleep)
        seen[] = unsafe_load(Ptr{Float64}(pointer(m)), n)
        p == cpu() || sleep(0.02)
        GC.@preserve m fill!(unsafe_array(Float64, m, n), 42.0)
    end
    memcpy!(dst, m; stream = s)
    synchronize(s)
    @test seen[] == src[end]
    @test all(==(42.0), dst)
    # The same in mode=:thread (no sleep, no I/O there).
    launch_host_func(s; mode = :thread) do
        GC.@preserve m fill!(unsafe_array(Float64, m, n), -1.0)
    end
    memcpy!(dst, m; stream = s)
    synchronize(s)
    @test all(==(-1.0), dst)
    free(m)

    # Events, and a stream that waits for another one (another device for SIM).
    e = Event(p)
    @test isdone(e)
    other = p == cpu() ? cpu() : (p == sim(0) ? sim(1) : sim(0))
    s2 = Stream(other)
    events_log = Int[]
    launch_host_func(() -> (p == cpu() || sleep(0.02); push!(events_log, 1)), s)
    record!(e, s)
    wait_event(s2, e)
    launch_host_func(() -> push!(events_log, 2), s2)
    synchronize(s2)
    @test events_log == [1, 2]
    synchronize(e)
    @test isdone(e)
    wait_event(nothing, e)
    record!(e)  # on the default stream: completes at once
    @test isdone(e)
    e_cpu = Event(cpu())
    if p != cpu()
        e2 = expect_dao(() -> record!(e_cpu, s), DAO_ERR_INVALID_ARGUMENT)
        @test occursin("place", e2.message)
    end
    close(e_cpu)
    close(e)
    @test_throws ArgumentError record!(e)

    # Exceptions in host functions come back at synchronize (at once on a
    # CPU stream, where the function runs inside launch_host_func).
    for (mode, text) in ((:task, "boom in a task"), (:thread, "boom on a thread"))
        if p == cpu()
            err = thrown(() -> launch_host_func(() -> error(text), s; mode = mode))
        else
            launch_host_func(() -> error(text), s; mode = mode)
            err = thrown(() -> synchronize(s))
        end
        @test err isa CallbackError && occursin(text, sprint(showerror, err))
        @test length(err.exceptions) == 1 && err.error === nothing
    end
    synchronize(s)  # reported once
    @test_throws ArgumentError launch_host_func(() -> nothing, s; mode = :bogus)

    # A block allocated on the stream keeps it open.
    if p != cpu()
        ca = Allocator(p; strategy = "caching")
        blk = alloc(ca, 4096; stream = s)
        @test_throws ArgumentError close(s)
        free(blk)
        close(ca)
    end
    close(s2)
    close(s)
    @test !isopen(s)
    close(s)  # twice: nothing
    @test_throws ArgumentError synchronize(s)
end

@testset "streams: default stream and bad input" begin
    flag = Ref(false)
    launch_host_func(() -> (flag[] = true), nothing)
    @test flag[]  # ran before launch_host_func returned
    flag[] = false
    launch_host_func(() -> (flag[] = true), nothing; mode = :thread)
    @test flag[]
    err = thrown(() -> launch_host_func(() -> error("inline"), nothing))
    @test err isa CallbackError
    cs = Stream(cpu())
    err = thrown(() -> launch_host_func(() -> error("inline cpu"), cs))
    @test err isa CallbackError && occursin("inline cpu", sprint(showerror, err))
    close(cs)
    @test isidle(nothing)
    synchronize(nothing)
    expect_dao(() -> Stream(sim(7)), DAO_ERR_NO_DEVICE)
    e = expect_dao(() -> Stream(Place(DAO_PLACE_SIM, -1)), DAO_ERR_INVALID_ARGUMENT)
    @test occursin("negative", e.message)
    expect_dao(() -> Dao.wrap_stream(sim(0), C_NULL), DAO_ERR_UNSUPPORTED)
    expect_dao(() -> Dao.wrap_stream(cpu(), C_NULL), DAO_ERR_UNSUPPORTED)
    expect_dao(() -> Event(sim(9)), DAO_ERR_NO_DEVICE)
    @test Dao.dao_stream_synchronize(C_NULL) == DAO_OK
    @test Dao.dao_stream_destroy(C_NULL) == DAO_ERR_INVALID_ARGUMENT
    @test Dao.dao_launch_host_func(C_NULL, C_NULL, C_NULL) == DAO_ERR_INVALID_ARGUMENT
    @test occursin("fn must not be NULL", Dao.last_error())
end

@testset "recycle pools" begin
    p = RecyclePool{Float32}(sim(0), 16, 8; max_buffers = 3, preallocate = 1, name = "frames")
    @test occursin("frames", sprint(show, p))
    s0 = stats(p)
    @test (s0.created, s0.free, s0.held, s0.queued) == (1, 1, 0, 0)
    b = acquire(p; timeout = 0)
    @test Dao.shape(b) == (16, 8) && Dao.cshape(b) == (8, 16) && Dao.cshape(p) == (8, 16)
    @test Dao.buffer_size(b) == (element_size = 4, bytes = 512)
    @test sizeof(b) == 512
    @test Dao.place(b) == sim(0)
    @test Dao.sequence(b) == typemax(UInt64)
    A = array(b)
    @test size(A) == (16, 8) && A isa HostArray{Float32,2}
    A .= reshape(Float32.(1:128), 16, 8)
    submit!(p, b)
    @test_throws ArgumentError array(b)  # its reference went into the queue
    t = take!(p; timeout = 0)
    @test Dao.sequence(t) == 0
    @test array(t) == reshape(Float32.(1:128), 16, 8)
    @test unsafe_array(t)[3, 2] == 19.0f0  # column-major: 3 + 16 * 1
    t2 = retain(t)
    release(t)
    @test stats(p).held == 1
    release(t)  # twice: nothing
    release(t2)
    s1 = stats(p)
    @test (s1.created, s1.free, s1.held, s1.queued) == (1, 1, 0, 0)

    # Counting: three buffers at most, a fourth times out.
    bs = [acquire(p; timeout = 0) for _ in 1:3]
    expect_dao(() -> acquire(p; timeout = 0), DAO_ERR_TIMEOUT)
    expect_dao(() -> take!(p; timeout = 0), DAO_ERR_TIMEOUT)
    s2 = stats(p)
    @test s2.created == 3 && s2.held == 3 && s2.free == 0
    @test s2.acquired == 4 && s2.submitted == 1 && s2.taken == 1 && s2.timeouts == 2
    @test s2.created == s2.free + s2.queued + s2.held
    expect_dao(() -> acquire(p; timeout = NaN), DAO_ERR_INVALID_ARGUMENT)
    e = expect_dao(() -> destroy!(p), DAO_ERR_BUSY)
    @test occursin("still out", e.message)

    # Closing: no more acquires; submits and takes drain the queue.
    submit!(bs[1])
    close(p)
    expect_dao(() -> acquire(p; timeout = 0), DAO_ERR_CLOSED)
    submit!(p, bs[2])
    q1 = take!(p; timeout = 0)
    q2 = take!(p; timeout = 0)
    @test (Dao.sequence(q1), Dao.sequence(q2)) == (1, 2)
    expect_dao(() -> take!(p; timeout = 0), DAO_ERR_CLOSED)
    foreach(release, (q1, q2, bs[3]))
    destroy!(p)
    @test_throws ArgumentError acquire(p)

    # Bad input.
    expect_dao(() -> RecyclePool{Float32}(cpu(), 0, 4; max_buffers = 2), DAO_ERR_INVALID_ARGUMENT)
    expect_dao(() -> RecyclePool{Float32}(cpu(), ntuple(_ -> 1, 9); max_buffers = 2), DAO_ERR_INVALID_ARGUMENT)
    expect_dao(() -> RecyclePool{Float32}(cpu(), 4; max_buffers = 0), DAO_ERR_INVALID_ARGUMENT)
    expect_dao(() -> RecyclePool{Float32}(sim(9), 4; max_buffers = 1), DAO_ERR_NO_DEVICE)
    expect_dao(() -> RecyclePool{UInt8}(sim(1), 40 * MiB; max_buffers = 2, preallocate = 2),
               DAO_ERR_OUT_OF_MEMORY)
    e = expect_dao(() -> RecyclePool{Float32}(cpu(), 4; max_buffers = 2, config = "bogus=1"),
                   DAO_ERR_INVALID_ARGUMENT)
    @test occursin("bogus", e.message)
    @test_throws ArgumentError RecyclePool{String}(cpu(), 4; max_buffers = 2)
    p1 = RecyclePool{Int}(cpu(), 4; max_buffers = 1, spin = 0)
    p2 = RecyclePool{Int}(cpu(), 4; max_buffers = 1)
    b1 = acquire(p1; timeout = 0)
    expect_dao(() -> submit!(p2, b1), DAO_ERR_INVALID_ARGUMENT)  # another pool's buffer
    release(b1)
    destroy!(p1)
    destroy!(p2)

    @testset "collections" begin
        c = Collection()
        pa = add!(c, "in", Int16, cpu(), 4, 4; max_buffers = 2)
        pb = add!(c, "out", Float64, sim(1), 10; max_buffers = 1)
        @test c["in"] === pa && c["out"] === pb
        e = expect_dao(() -> c["nope"], DAO_ERR_NOT_FOUND)
        @test occursin("'in'", e.message) && occursin("'out'", e.message)
        expect_dao(() -> add!(c, "in", Int16, cpu(), 4; max_buffers = 2), DAO_ERR_INVALID_ARGUMENT)
        expect_dao(() -> destroy!(pa), DAO_ERR_INVALID_ARGUMENT)  # the collection owns it
        b = acquire(pa; timeout = 0)
        array(b) .= Int16(3)
        submit!(b)
        t = take!(pa; timeout = 0)
        @test sum(array(t)) == 48
        e = expect_dao(() -> destroy!(c), DAO_ERR_BUSY)
        @test occursin("'in'", e.message)
        release(t)
        close(c)
        expect_dao(() -> acquire(pb; timeout = 0), DAO_ERR_CLOSED)
        destroy!(c)
        @test_throws ArgumentError acquire(pa)
        @test_throws ArgumentError c["in"]
    end

    if Threads.nthreads() >= 2
        @testset "a pipeline across threads" begin
            pool = RecyclePool{Int}(cpu(), 64; max_buffers = 4)
            n = 200
            consumer = Threads.@spawn begin
                total = 0
                for _ in 1:n
                    buf = take!(pool; timeout = 30)
                    total += sum(array(buf))
                    release(buf)
                end
                total
            end
            for i in 1:n
                buf = acquire(pool; timeout = 30)
                fill!(array(buf), i)
                submit!(pool, buf)
            end
            @test fetch(consumer) == 64 * sum(1:n)
            st = stats(pool)
            @test st.submitted == n && st.taken == n && st.created <= 4
            destroy!(pool)
        end
    end
end

@testset "tiered pools" begin
    tp = TieredPool(sim(1), cpu(), 4 * MiB; prefetch = 0)
    @test isopen(tp) && occursin("TieredPool", sprint(show, tp))
    x = Tensor{Float64}(tp, 1000)
    y = Tensor{Float64}(tp, 1000)
    z = Tensor{Float64}(tp, 1000)
    @test size(x) == (1000,) && sizeof(x) == 8000
    @test Dao.state(x) == Dao.DAO_TENSOR_UNINITIALIZED
    write!(x, collect(1.0:1000.0))
    write!(y, fill(2.0, 1000))
    synchronize(tp)
    @test Dao.state(x) == Dao.DAO_TENSOR_ON_HOST
    submit!(tp, [x, y], [z]) do ins, outs
        outs[1] .= ins[1] .* ins[2]
        nothing
    end
    @test read(z) == 2 .* (1.0:1000.0)
    @test Dao.state(x) == Dao.DAO_TENSOR_ON_DEVICE
    st = stats(tp)
    @test st.struct_size == sizeof(TieredStats)
    @test (st.kernels_submitted, st.kernels_run, st.tensors_live) == (1, 1, 3)
    ls = link_stats(tp)
    @test ls.struct_size == sizeof(TieredLinkStats)
    @test ls.bytes_to_device == st.bytes_fetched && ls.host_pageable == 1
    trim!(tp)
    @test stats(tp).device_bytes == 0
    dst = zeros(1000)
    read!(x, dst)
    @test dst == 1.0:1000.0
    # Retired: no data until written again (dao_tensor_retire).
    retire!(x)
    @test_throws DaoError read!(x, dst)
    write!(x, collect(1.0:1000.0))
    read!(x, dst)
    @test dst == 1.0:1000.0

    # The kernel's stream.
    seen = Ref(C_NULL)
    submit!(tp, [x], [y]; pass_stream = true) do ins, outs, stream
        seen[] = stream
        outs[1] .= ins[1]
        nothing
    end
    @test read(y) == 1.0:1000.0
    @test seen[] != C_NULL

    # Six tensors of 1 MiB through a budget of 4 MiB: evictions and fetches,
    # and the results of a plain computation.
    n = MiB ÷ 8
    ts = [Tensor{Float64}(tp, n) for _ in 1:6]
    model = [fill(Float64(k), n) for k in 1:6]
    for k in 1:6
        write!(ts[k], model[k])
    end
    add_kernel = (ins, outs) -> (outs[1] .= ins[2] .+ ins[1]; nothing)
    for k in 2:6
        submit!(add_kernel, tp, [ts[k-1], ts[k]], [ts[k]])
        model[k] .+= model[k-1]
    end
    for k in 5:-1:1
        submit!(add_kernel, tp, [ts[k+1], ts[k]], [ts[k]])
        model[k] .+= model[k+1]
    end
    @test [read(t) for t in ts] == model
    @test first.(model) == [56, 55, 52, 46, 36, 21]
    st = stats(tp)
    @test st.evictions > 0 && st.bytes_evicted > 0 && st.fetches >= 6
    @test st.peak_device_bytes <= 4 * MiB
    @test st.kernels_run == st.kernels_submitted == 12

    # Bad input.
    expect_dao(() -> Tensor{UInt8}(tp, 8 * MiB), DAO_ERR_OUT_OF_MEMORY)
    expect_dao(() -> Tensor{UInt8}(tp, 0), DAO_ERR_INVALID_ARGUMENT)
    e = expect_dao(() -> write!(x, zeros(10)), DAO_ERR_INVALID_ARGUMENT)
    @test occursin("bytes is 80", e.message)
    expect_dao(() -> read(Tensor{Float64}(tp, 4)), DAO_ERR_INVALID_STATE)  # never written
    oversized = [Tensor{UInt8}(tp, 2 * MiB) for _ in 1:3]
    expect_dao(() -> submit!((i, o) -> nothing, tp, oversized, []), DAO_ERR_OUT_OF_MEMORY)
    expect_dao(() -> Dao.set_score_callback!(i -> 0.0, tp), DAO_ERR_INVALID_STATE)  # policy belady
    other = TieredPool(sim(1), cpu(), MiB)
    w = Tensor{Float64}(other, 4)
    expect_dao(() -> submit!((i, o) -> nothing, tp, [w], []), DAO_ERR_INVALID_ARGUMENT)
    close(other)
    @test_throws ArgumentError read(w)
    expect_dao(() -> TieredPool(sim(1), cpu(), 0), DAO_ERR_INVALID_ARGUMENT)
    expect_dao(() -> TieredPool(cpu(), cpu(), MiB), DAO_ERR_INVALID_ARGUMENT)
    expect_dao(() -> TieredPool(sim(1), cpu(), 1 << 40), DAO_ERR_OUT_OF_MEMORY)
    expect_dao(() -> TieredPool(sim(5), cpu(), MiB), DAO_ERR_NO_DEVICE)
    expect_dao(() -> TieredPool(sim(1), cpu(), MiB; config = "bogus=1"), DAO_ERR_INVALID_ARGUMENT)

    # Release, and a release that C sees twice.
    h = x.handle
    release(x)
    release(x)  # twice: nothing
    @test Dao.dao_tensor_release(h) == DAO_ERR_INVALID_ARGUMENT
    @test occursin("already released", Dao.last_error())
    @test_throws ArgumentError read(x)
    close(tp)
    @test !isopen(tp)
    @test_throws ArgumentError read(z)
    close(tp)  # twice: nothing

    @testset "a full host tier" begin
        hp = TieredPool(sim(1), cpu(), 4 * MiB; host_budget = MiB)
        h1 = Tensor{UInt8}(hp, MiB)
        write!(h1, zeros(UInt8, MiB))
        h2 = Tensor{UInt8}(hp, MiB)
        e = expect_dao(() -> write!(h2, zeros(UInt8, MiB)), DAO_ERR_OUT_OF_MEMORY)
        @test occursin("host_budget", e.message)
        close(hp)
    end

    @testset "failing kernels" begin
        fp = TieredPool(sim(1), cpu(), MiB)
        a = Tensor{Float32}(fp, 16)
        submit!((ins, outs) -> error("kernel boom"), fp, [], [a])
        err = thrown(() -> synchronize(fp))
        @test err isa CallbackError
        @test err.error isa DaoError && err.error.status == DAO_ERR_INVALID_STATE
        @test occursin("kernel boom", sprint(showerror, err))
        expect_dao(() -> synchronize(fp), DAO_ERR_INVALID_STATE)  # the pool stays failed
        expect_dao(() -> Tensor{Float32}(fp, 4), DAO_ERR_INVALID_STATE)
        close(fp)

        sp = TieredPool(sim(1), cpu(), MiB)
        b = Tensor{Float32}(sp, 16)
        submit!((ins, outs) -> DAO_ERR_OUT_OF_MEMORY, sp, [], [b])  # a status, not an exception
        e = expect_dao(() -> synchronize(sp), DAO_ERR_INVALID_STATE)
        @test occursin("returned out of memory", e.message)
        close(sp)
    end

    @testset "a Julia scoring function" begin
        scored = TieredPool(sim(1), cpu(), 2 * MiB; policy = "callback", prefetch = 0)
        n = MiB ÷ 8
        u = [Tensor{Float64}(scored, n) for _ in 1:3]
        foreach(t -> write!(t, zeros(n)), u)
        no_score = TieredPool(sim(1), cpu(), MiB; policy = "callback")
        nt = Tensor{Float64}(no_score, 4)
        e = expect_dao(() -> submit!((i, o) -> nothing, no_score, [nt], []), DAO_ERR_INVALID_STATE)
        @test occursin("no scoring function", e.message)
        close(no_score)
        calls = Threads.Atomic{Int}(0)
        set_score_callback!(scored) do info
            Threads.atomic_add!(calls, 1)
            info.next_use == typemax(UInt64) ? 1e30 : Float64(info.next_use - info.now)
        end
        for _ in 1:2, t in u
            submit!((ins, outs) -> (outs[1] .+= 1; nothing), scored, [t], [t])
        end
        @test all(t -> read(t) == fill(2.0, n), u)
        @test calls[] > 0
        @test stats(scored).evictions > 0
        synchronize(scored)
        close(scored)
    end
end

# Objects made here and dropped are freed by their finalizers.
@noinline function make_garbage(p::Place, pool, tp)
    for _ in 1:50
        alloc(p, 4 * KiB)
    end
    a = Allocator(p; strategy = "caching")
    for _ in 1:10
        alloc(a, 1 * KiB)
    end
    for _ in 1:2
        acquire(pool; timeout = 0)
    end
    Tensor{Float64}(tp, 16)
    Stream(p)
    Event(p)
    nothing
end

@testset "finalizers" begin
    pool = RecyclePool{Float32}(sim(0), 32; max_buffers = 4)
    tp = TieredPool(sim(1), cpu(), MiB)
    before = used(sim(0))
    make_garbage(sim(0), pool, tp)
    freed() = used(sim(0)) == before && stats(pool).held == 0 &&
              (synchronize(tp); stats(tp).tensors_live == 0)
    for _ in 1:10
        GC.gc()
        freed() && break
        sleep(0.01)
    end
    @test used(sim(0)) == before
    @test stats(pool).held == 0
    synchronize(tp)
    @test stats(tp).tensors_live == 0
    destroy!(pool)
    close(tp)
end

# Collective calls of an in-process communicator block in C until every rank
# has made them, so each rank runs in a task of its own (Threads.@spawn); the
# multi-rank part needs at least as many Julia threads as ranks (check.sh
# starts julia with --threads=2) and is skipped otherwise. A 1-rank
# communicator makes its collective calls on the calling thread.
on_ranks(f, comms) = fetch.([Threads.@spawn f(c) for c in comms])

@testset "whole memory" begin
    @testset "bad input" begin
        expect_dao(() -> local_comms(Place[]), DAO_ERR_INVALID_ARGUMENT)
        expect_dao(() -> local_comms([sim(99)]), DAO_ERR_NO_DEVICE)
        @test Dao.whole_type_name(:chunked) == "chunked"
        @test Dao.whole_type_name(Dao.DAO_WHOLE_CONTINUOUS) == "continuous"
        @test Dao.whole_location_name(:host) == "host"
        @test Dao.whole_type_name(42) == "unknown"
        @test_throws ArgumentError Dao.whole_type_name(:nope)
        # The experimental transport hook: a transport with a bad struct_size
        # is refused (and not taken over), and transport_error sets the message.
        nofields = map(Dao._zero_field, fieldtypes(Dao.CommTransport))
        expect_dao(() -> Dao.comm_from_transport(Dao.CommTransport(nofields...), cpu()),
                   DAO_ERR_INVALID_ARGUMENT)
        @test Dao.transport_error(Dao.DAO_ERR_BACKEND, "transport down") == Dao.DAO_ERR_BACKEND
        @test Dao.last_error() == "transport down"
    end

    @testset "one rank" begin
        (c,) = local_comms([sim(0)])
        @test Dao.rank(c) == 0 && nranks(c) == 1
        @test rank_place(c, 0) == sim(0)
        @test Dao.transport(c) == "in-process"
        @test Dao.info(c).shares_address_space == 1
        expect_dao(() -> rank_place(c, 1), DAO_ERR_INVALID_ARGUMENT)
        @test supported(c, :chunked, :device)
        expect_dao(() -> supported(c, 7, :device), DAO_ERR_INVALID_ARGUMENT)
        barrier(c)
        expect_dao(() -> WholeMemory(c, 10, 3), DAO_ERR_INVALID_ARGUMENT)   # 3 does not divide 10
        expect_dao(() -> WholeMemory(c, 0, 8), DAO_ERR_INVALID_ARGUMENT)
        w = WholeMemory(c, 16 * 8, 8; type = :continuous)
        @test entries(w) == 1:16 && entry_rank(w, 16) == 0
        expect_dao(() -> entry_rank(w, 17), DAO_ERR_INVALID_ARGUMENT)
        expect_dao(() -> partition(w, 1), DAO_ERR_INVALID_ARGUMENT)
        A = whole_array(Float64, w)
        A .= 1:16
        @test gather(Float64, w, [16, 1]) == [16.0, 1.0]
        expect_dao(() -> gather(Float64, w, [0]), DAO_ERR_INVALID_ARGUMENT)
        @test_throws ArgumentError gather!(zeros(Float64, 3), w, [1, 2])
        path = tempname()
        store(w, path)
        @test filesize(path) == 16 * 8
        A .= 0
        load!(w, path)
        @test local_part(Float64, w) == 1:16
        rm(path)
        expect_dao(() -> load!(w, path), Dao.DAO_ERR_NOT_FOUND)
        expect_dao(() -> destroy!(c), DAO_ERR_BUSY)   # w still exists
        destroy!(w)
        @test_throws ArgumentError gather(Float64, w, [1])
        destroy!(c)
    end

    if Threads.nthreads() >= 2
        @testset "two SIM devices, $type" for type in (:continuous, :chunked, :distributed)
            comms = local_comms([sim(0), sim(1)])
            @test [Dao.rank(c) for c in comms] == [0, 1]
            @test all(c -> nranks(c) == 2, comms)
            @test rank_place(comms[1], 1) == sim(1)
            # 10 entries of 4 Int32 on 2 ranks: 5 each.
            ws = on_ranks(c -> WholeMemory(c, 10 * 16, 16; type = type), comms)
            w0, w1 = ws
            @test partition(w0, 1).first_entry == 5 && partition(w0, 1).entry_count == 5
            @test entries(w1) == 6:10 && entries(w0, 0) == 1:5
            @test [entry_rank(w0, i) for i in (1, 5, 6, 10)] == [0, 0, 1, 1]
            @test Dao.info(w1).place == sim(1) && Dao.info(w1).entry_count == 10
            # Scatter from rank 0 into both ranks' parts, then gather on rank 1.
            data = Int32.(1:40)
            scatter!(w0, 1:10, data)
            on_ranks(barrier, comms)
            @test gather(Int32, w1, 1:10) == data
            @test gather(Int32, w1, [10, 1, 10]) == Int32[37:40; 1:4; 37:40]
            @test local_part(Int32, w1) == data[21:40]
            # Every rank together, each its own indices (rank 1 none).
            got = on_ranks(w -> gather_collective(Int32, w, w === w0 ? (1:10) : Int[]), ws)
            @test got[1] == data && isempty(got[2])
            on_ranks(w -> scatter_collective!(w, w === w0 ? [10] : Int[],
                                              w === w0 ? Int32.(37:40) : Int32[]), ws)
            on_ranks(barrier, comms)
            @test gather(Int32, w1, [10]) == Int32.(37:40)
            # One rank's bad index fails both.
            errs = on_ranks(w -> thrown(() -> gather_collective(Int32, w, w === w0 ? [11] : [1])), ws)
            @test all(e -> e isa DaoError && e.status == DAO_ERR_INVALID_ARGUMENT, errs)
            if type == :distributed
                expect_dao(() -> rank_part(Int32, w0, 1), DAO_ERR_UNSUPPORTED)
            else
                @test rank_part(Int32, w0, 1) == data[21:40]
            end
            # Collective bad input: every rank gets DAO_ERR_INVALID_ARGUMENT.
            errs = on_ranks(c -> thrown(() -> WholeMemory(c, 10, 3; type = type)), comms)
            @test all(e -> e isa DaoError && e.status == DAO_ERR_INVALID_ARGUMENT, errs)
            expect_dao(() -> scatter!(w0, [11], Int32.(1:4)), DAO_ERR_INVALID_ARGUMENT)
            on_ranks(destroy!, ws)
            foreach(destroy!, comms)
        end
    else
        @test_skip "two-rank whole memory needs julia --threads=2 or more"
    end
end

@testset "README example" begin
    readme = joinpath(@__DIR__, "..", "..", "README.md")
    if isfile(readme)
        code = match(r"```julia\n(.*?)```"s, read(readme, String))
        @test code !== nothing
        if code !== nothing
            example_module = Module(:ReadmeExample)
            @test (Base.include_string(example_module, code.captures[1], "README.md"); true)
        end
    end
end

end # @testset "Dao.jl"
