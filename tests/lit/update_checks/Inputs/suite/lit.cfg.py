# A suite of one test for tests/lit/update_checks/figures.test: the copy it
# makes of figures.test runs here, outside the lpu suite, with our tools and
# FileCheck from the PATH it is given.
import os
import lit.formats

config.name = "update-checks-fixture"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test"]
config.test_source_root = config.test_exec_root = os.path.dirname(__file__)
config.environment["PATH"] = os.environ["PATH"]
config.environment["NO_COLOR"] = "1"
# As tests/lit/lit.cfg.py: the tool's recorder stands in for FileCheck.
if lit_config.params.get("record_checks"):
    config.environment["PATH"] = lit_config.params["record_checks"] + os.pathsep + config.environment["PATH"]
