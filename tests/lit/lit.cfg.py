# lit configuration for the file tests. Tests sit in folders by feature; a
# test is any .lpu, .test, .lpuasm or .mlir-like .ir file with RUN lines.
import os
import lit.formats

config.name = "lpu"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".lpu", ".test", ".lpuasm", ".ir"]
config.excludes = ["Inputs", "lit.cfg.py", "README.md", "expect_exit.py", "update_checks.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.lpu_obj_root, "tests", "lit")

# Tools: ours first, then FileCheck, not, count, split-file from LLVM 14.
config.environment["PATH"] = os.pathsep.join(
    [config.lpu_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
# tests/lit/update_checks.py runs a test with FileCheck replaced by a
# recorder of what it is given (--param record_checks=FOLDER, which holds it).
if lit_config.params.get("record_checks"):
    config.environment["PATH"] = lit_config.params["record_checks"] + os.pathsep + config.environment["PATH"]
# Diagnostics must not depend on the terminal or the user's environment.
config.environment["NO_COLOR"] = "1"
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.substitutions.append(("%expect_exit", config.python_executable + " " +
                              os.path.join(config.lpu_src_root, "tests", "lit", "expect_exit.py")))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%src_root", config.lpu_src_root))
config.substitutions.append(("%obj_root", config.lpu_obj_root))
config.substitutions.append(("%examples", os.path.join(config.lpu_src_root, "examples")))
config.substitutions.append(("%stdlib", os.path.join(config.lpu_src_root, "stdlib")))

if os.getuid() != 0:
    config.available_features.add("non-root")
# The ASan+UBSan tree (scripts/build.sh --sanitize) runs our tools 5 to 50
# times slower: a test too slow for it says `UNSUPPORTED: sanitize`, and one
# that stands in for it there `REQUIRES: sanitize`.
if config.lpu_sanitize.upper() in ("ON", "1", "TRUE", "YES", "Y"):
    config.available_features.add("sanitize")
# lpurun built with MPI (sim/mpi/): tests/lit/mpi/ start it with mpirun on
# this host, as root too in CI's containers, more ranks than cores.
if config.lpu_mpi.upper() in ("ON", "1", "TRUE", "YES", "Y"):
    config.available_features.add("mpi")
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    config.environment["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    # In the sanitizer tree, the ranks mpirun starts check everything but
    # leaks: OpenMPI's own threads keep allocations for the process's life
    # (unwound through its unloaded components, no suppression can name
    # them). tests/unit/sim/RanksTest.cpp runs the same window loop over
    # threads with the leak check on.
    if config.lpu_sanitize.upper() in ("ON", "1", "TRUE", "YES", "Y"):
        asan = config.environment.get("ASAN_OPTIONS", "")
        config.environment["OMPI_MCA_mca_base_env_list"] = "ASAN_OPTIONS=" + ":".join(
            [o for o in asan.split(":") if o and not o.startswith("detect_leaks")] + ["detect_leaks=0"])
