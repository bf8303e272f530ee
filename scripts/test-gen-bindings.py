#!/usr/bin/env python3
"""Tests `scripts/gen-bindings.py --check` (ctest: bindings_generated_check).

On a copy of include/ and the four generated files in a scratch directory:
  1. --check passes on the unmodified copy;
  2. after a new DAO_API prototype is planted in a header of the copy,
     --check fails, writes nothing, and its diff names the new function in
     each of the four files;
  3. generating (without --check) declares the function in all four, and
     --check passes again.
Exits 0 when all hold, 1 otherwise.
"""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GEN = os.path.join(HERE, "gen-bindings.py")
OUTPUTS = ["bindings/fortran/src/dao_c.f90", "bindings/rust/dao-sys/src/lib.rs",
           "bindings/julia/Dao/src/capi.jl", "bindings/python/dao/_capi.py"]
NEW = "dao_sim_planted_for_test"
PROTOTYPE = f"""
/**
 * @brief A function planted by test-gen-bindings.py.
 * @param[in]  device A device index.
 * @param[out] bytes  Receives a number; may be NULL.
 */
DAO_API dao_status {NEW}(int device, size_t *bytes);
"""


def run(root, *args):
    return subprocess.run([sys.executable, GEN, "--root", root, *args],
                          capture_output=True, text=True)


def main():
    failures = []

    def expect(cond, what):
        print(("ok:   " if cond else "FAIL: ") + what)
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="dao-gen-bindings-") as tmp:
        shutil.copytree(os.path.join(ROOT, "include"), os.path.join(tmp, "include"))
        for rel in OUTPUTS:
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            shutil.copy(os.path.join(ROOT, rel), os.path.join(tmp, rel))

        r = run(tmp, "--check")
        expect(r.returncode == 0, "--check passes on an unmodified copy")

        header = os.path.join(tmp, "include", "dao", "sim.h")
        text = open(header, encoding="utf-8").read()
        at = text.rindex("#ifdef __cplusplus")
        open(header, "w", encoding="utf-8").write(text[:at] + PROTOTYPE + "\n" + text[at:])
        before = {rel: open(os.path.join(tmp, rel), encoding="utf-8").read() for rel in OUTPUTS}
        r = run(tmp, "--check")
        expect(r.returncode == 1, "--check fails after a new DAO_API prototype (exit 1)")
        for rel in OUTPUTS:
            expect(f"b/{rel}" in r.stdout, f"the diff covers {rel}")
            expect(open(os.path.join(tmp, rel), encoding="utf-8").read() == before[rel],
                   f"--check leaves {rel} as it was")
        expect(sum(NEW in line for line in r.stdout.splitlines() if line.startswith("+")) >= 3,
               f"the diff adds {NEW} to the files")

        r = run(tmp)
        expect(r.returncode == 0, "generating succeeds")
        for rel in OUTPUTS:
            expect(NEW in open(os.path.join(tmp, rel), encoding="utf-8").read(),
                   f"{rel} declares {NEW} once generated")
        r = run(tmp, "--check")
        expect(r.returncode == 0, "--check passes on the regenerated copy")

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
