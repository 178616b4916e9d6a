#!/usr/bin/env python3
"""The simulator's speed on a 4096x4096x4096 fp16 matmul tiled over the four
MXM planes of one groqchip1, next to the same product with numpy/OpenBLAS on
the same machine in the same run. Figures, not pass/fail.
usage: sim_matmul.py LPURUN [M K N]"""
import json, os, resource, subprocess, sys, tempfile, time
import numpy as np

lpurun = sys.argv[1]
m, k, n = (int(a) for a in sys.argv[2:5]) if len(sys.argv) > 4 else (4096, 4096, 4096)
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from sim_matmul_gen import read_tile_outputs, write_tile_inputs
threads = os.cpu_count() or 1
rng = np.random.default_rng(0)
A = rng.uniform(-1, 1, (m, k)).astype(np.float16)
B = rng.uniform(-1, 1, (k, n)).astype(np.float16)

with tempfile.TemporaryDirectory() as d:
    subprocess.run([sys.executable, f"{here}/sim_matmul_gen.py", str(m), str(k), str(n), "-o",
                    f"{d}/mm.lpuasm"], check=True)
    subprocess.run([lpurun, f"{d}/mm.lpuasm", "--emit=binary", "-o", f"{d}/mm.lpx"], check=True)
    args = write_tile_inputs(A, B, d)

    def run(extra):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        out = subprocess.run([lpurun, f"{d}/mm.lpx", "--report=json", f"--threads={threads}"] + extra,
                             check=True, capture_output=True, text=True).stdout
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return json.loads(out), wall, cpu

    timing, t_wall, t_cpu = run(["--timing-only"])
    report, wall, cpu = run(args)
    C = read_tile_outputs(d, n)

cycles = report["cycles"]
assert cycles == timing["cycles"]
Af, Bf = A.astype(np.float32), B.astype(np.float32)


def numpy_seconds():
    Af @ Bf  # warm up
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        R = Af @ Bf
        best = min(best, time.perf_counter() - t0)
    return best, R


# OpenBLAS reads OPENBLAS_CORETYPE when it loads, so each setting needs its
# own process.
def numpy_in_child(coretype):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    code = ("import numpy as np, time\n"
            f"r=np.random.default_rng(0); a=r.uniform(-1,1,({m},{k})).astype(np.float32); "
            f"b=r.uniform(-1,1,({k},{n})).astype(np.float32)\n"
            "a@b\nbest=1e9\n"
            "for _ in range(3):\n t=time.perf_counter(); a@b; best=min(best,time.perf_counter()-t)\n"
            "print(best)")
    return float(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                capture_output=True, text=True).stdout)


blas = os.path.realpath("/etc/alternatives/libblas.so.3-x86_64-linux-gnu")
np_default = numpy_in_child(None)
np_skx = numpy_in_child("SkylakeX")
_, R = numpy_seconds()
err = float(np.abs(C - R).max())
flops = 2.0 * m * k * n
best_np = min(np_default, np_skx)
print(f"matmul {m}x{k}x{n} fp16 -> fp32 on one simulated groqchip1, host threads {threads}")
print(f"  simulated cycles:          {cycles} ({report['time_us']:.1f} us at {report['clock_mhz']:g} MHz)")
print(f"  lpurun host seconds:       {wall:.2f} wall, {cpu:.2f} cpu (incl. reading {len([a for a in args if a.startswith('--input')])} .npy inputs, writing outputs)")
print(f"  of which simulating:       {report['host_run_seconds']:.2f} s (the rest: reading and placing inputs, writing outputs)")
print(f"  simulated cycles per host second: {cycles / wall:,.0f} ({cycles / report['host_run_seconds']:,.0f} while simulating)")
print(f"  timing-only host seconds:  {t_wall:.2f} ({cycles / t_wall:,.0f} cycles/s)")
print(f"  max |C - numpy| = {err:.3g}")
print(f"  numpy ({blas}), fp32 sgemm, {threads} threads:")
print(f"    OPENBLAS_CORETYPE unset:    {np_default:.2f} s ({flops / np_default / 1e9:.0f} GFLOP/s)")
print(f"    OPENBLAS_CORETYPE=SkylakeX: {np_skx:.2f} s ({flops / np_skx / 1e9:.0f} GFLOP/s)")
print(f"  lpurun / fastest numpy: {wall / best_np:.2f}x whole run, {report['host_run_seconds'] / best_np:.2f}x simulation only (target: within 4x)")
print(f"  host load average at the end: {os.getloadavg()[0]:.1f} on {threads} cores (other work shares this machine)")
