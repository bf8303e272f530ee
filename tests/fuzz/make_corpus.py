#!/usr/bin/env python3
"""Writes the seed corpora under tests/fuzz/corpus/<harness>/.

fuzz_config seeds are hand-written configs (first byte: the target, see
fuzz_config.cpp; for allocator targets the second byte picks the place).
The other harnesses read their input with FuzzedDataProvider, which takes
numbers from the end of the input and strings from the front: for them a few
pseudo-random inputs of several lengths (fixed seed, so the files do not
change between runs) give libFuzzer a start in every operation.

Usage: python3 tests/fuzz/make_corpus.py   (rewrites the corpus directories)
"""
import os
import random
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))

BUDDY = [
    "",
    "chunk_size=4MiB,max_pool=32MiB",
    "min_block=512,chunk_size=1MiB,initial_pool=2MiB",
    "min_block=4KiB, chunk_size = 16MiB ,max_pool=0",
    "initial_pool=1MiB,max_pool=8MiB,chunk_size=2MiB",
]
CACHING = [
    "",
    "max_split_size=32MiB,roundup_power2_divisions=4,garbage_collection_threshold=0.8,"
    "memory_fraction=0.5,max_pool=48MiB,expandable_segments=false,reserve_slack=0.5,"
    "reserve_headroom=none",
    "max_split_size_mb=64",
    "expandable_segments=off,garbage_collection_threshold=0.5,max_pool=16MiB",
    "reserve_headroom=0.25,reserve_slack=none,roundup_power2_divisions=16",
    "memory_fraction=1,max_split_size=0",
]
# Stacked strategies: (target, where, config); target 7 is "limit" (the
# fourth name of strategy_list.h).
STACKS = [
    (7, 0, "max_pool=1MiB,upstream=caching,upstream.upstream=buddy"),
    (7, 2, "memory_fraction=0.5"),
    (1, 0, "upstream=limit,upstream.max_pool=3MiB"),
]
TIERED = [
    "",
    "policy=lru,prefetch=0",
    "policy=size_aware,prefetch=3,host_budget=1GiB,link_bandwidth=16GB/s",
    "policy=belady,link_bandwidth=25GiB/s",
    "policy=callback",
]
RECYCLE = ["", "name=frames", "spin=0,name=tiles", "spin=100"]
PARSER = ["a=b, c = d ,e=f=g,", "key=value", " x = 1 ,, y=2", "=", "k=v,k=w"]
SIZES = ["64MiB", " 1.5 GiB ", "4096", "18446744073709551615", "0.5K", "2TB", "1e3", "."]


def write(harness, name, data):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    for h in ("fuzz_allocator", "fuzz_recycle", "fuzz_tiered", "fuzz_config"):
        shutil.rmtree(os.path.join(HERE, "corpus", h), ignore_errors=True)
    n = 0
    for target, configs in ((0, BUDDY), (1, CACHING), (2, [""])):
        for where in range(3):
            for c in configs:
                write("fuzz_config", "alloc-%02d" % n, bytes([target, where]) + c.encode())
                n += 1
    for i, (target, where, c) in enumerate(STACKS):
        write("fuzz_config", "stack-%02d" % i, bytes([target, where]) + c.encode())
    for i, c in enumerate(TIERED):
        write("fuzz_config", "tiered-%d" % i, b"\x03" + c.encode())
    for i, c in enumerate(RECYCLE):
        write("fuzz_config", "recycle-%d" % i, b"\x04" + c.encode())
    for i, c in enumerate(PARSER):
        write("fuzz_config", "parser-%d" % i, b"\x05" + c.encode())
    for i, c in enumerate(SIZES):
        write("fuzz_config", "size-%d" % i, b"\x06" + c.encode())

    rng = random.Random(20261122)
    for harness in ("fuzz_allocator", "fuzz_recycle", "fuzz_tiered"):
        for i, length in enumerate((16, 48, 96, 160, 256, 384, 512, 768, 1024, 1536, 2048, 4096)):
            write(harness, "random-%02d" % i, bytes(rng.randrange(256) for _ in range(length)))


if __name__ == "__main__":
    main()
