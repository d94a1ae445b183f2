# SPDX-License-Identifier: BSD-3-Clause
"""Spack recipe for pairbench (docs/integrations.md says how a site uses it)."""
# Spack's idiom: the package API comes in by `from spack.package import *` (`spack style`
# checks this file the Spack way).
# ruff: noqa: F403, F405

import glob
import os
import shutil

import spack
from spack.package import *

# Compilers became dependencies ("c" virtual) in Spack 0.23.0; the development snapshots
# before that release (0.23.0.dev0, mid 2024) have no provider of "c" and cannot
# concretize a package that asks for one.
_VERSION = spack.spack_version_info
_LANGUAGE_VIRTUALS = _VERSION[:2] >= (1, 0) or (len(_VERSION) == 3 and _VERSION >= (0, 23, 0))


class Pairbench(CMakePackage):
    """Multi-core interconnect micro-benchmarks: verbs and MPI latency, bandwidth and
    message rate with 1..N pairs of processes started at the same instant, pinned with
    hwloc, swept into tidy CSV by a Python driver (compare, accept, report)."""

    # No public release is published yet. A site builds from its clone
    # (`spack dev-build -d CLONE pairbench@main` or `spack develop pairbench@main` in an
    # environment), or sets PAIRBENCH_GIT to its git mirror (a file:// URL works) before
    # concretizing `pairbench@main`.
    homepage = "file:///opt/src/pairbench/README.md"
    git = os.environ.get("PAIRBENCH_GIT", "file:///opt/src/pairbench")

    license("BSD-3-Clause")

    version("main", branch="main")

    variant("mpi", default=True, description="Build pairbench-mpi (MPI layer)")
    variant("verbs", default=True, description="Build pairbench-verbs (RDMA verbs layer)")
    variant("driver", default=True,
            description="Install the Python driver `pairbench` (sweep, compare, accept, ...)")

    if _LANGUAGE_VIRTUALS:
        depends_on("c", type="build")
    depends_on("cmake@3.25:", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("hwloc@2:")
    depends_on("mpi", when="+mpi")
    depends_on("rdma-core", when="+verbs")

    # The driver: scripts/pyproject.toml's dependencies.
    with when("+driver"):
        depends_on("python@3.11:", type=("build", "run"))
        depends_on("py-pip", type="build")
        depends_on("py-setuptools@61:", type="build")
        depends_on("py-pandas@1.5:", type="run")
        depends_on("py-numpy@1.23:", type="run")
        depends_on("py-matplotlib@3.6:", type="run")
        depends_on("py-rich@12:", type="run")
        depends_on("py-scipy@1.10:", type="run")
        depends_on("py-jinja2@3.1:", type="run")
        depends_on("py-pyarrow@14:", type="run")

    def cmake_args(self):
        # CMakeLists.txt builds a layer when it finds its libraries; ~mpi makes sure it
        # does not find an MPI outside the spec. (~verbs only drops the dependency: the
        # build still uses a libibverbs that pkg-config finds on the system.)
        args = [self.define("BUILD_TESTING", self.run_tests)]
        if self.spec.satisfies("~mpi"):
            args.append(self.define("CMAKE_DISABLE_FIND_PACKAGE_MPI", True))
        return args

    @run_after("install")
    def install_driver(self):
        """pip --target into PREFIX/lib/pythonX.Y/site-packages (whatever install scheme the
        Python has: Debian's puts `--prefix` installs under PREFIX/local), then
        PREFIX/bin/pairbench: that Python with the driver's and its run dependencies'
        site directories, so the command works without `spack load` setting PYTHONPATH."""
        if self.spec.satisfies("~driver"):
            return
        python = self.spec["python"]
        site = join_path(self.prefix.lib, f"python{python.version.up_to(2)}", "site-packages")
        python.command("-m", "pip", "install", "--no-deps", "--no-build-isolation",
                       "--no-index", f"--target={site}",
                       join_path(self.stage.source_path, "scripts"))
        shutil.rmtree(join_path(site, "bin"), ignore_errors=True)  # pip's own script
        dirs = [site]
        for dep in self.spec.dependencies(deptype="run"):
            if dep.name.startswith("py-"):
                dirs += [d for pattern in ("lib*/python3*/site-packages",
                                           "lib*/python3*/dist-packages",
                                           "local/lib*/python3*/dist-packages",
                                           "lib/python3/dist-packages")
                         for d in sorted(glob.glob(join_path(dep.prefix, pattern)))
                         if d not in dirs]
        mkdirp(self.prefix.bin)
        wrapper = join_path(self.prefix.bin, "pairbench")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\n# pairbench's driver (Spack recipe: its Python and the site "
                    "directories of it and its dependencies)\n"
                    f'PYTHONPATH="{":".join(dirs)}${{PYTHONPATH:+:$PYTHONPATH}}" '
                    f'exec "{python.command.path}" -m pairbench "$@"\n')
        os.chmod(wrapper, 0o755)

    def test_list_tests(self):
        """the installed executables answer --list-tests (no launch, no RDMA device)"""
        # `spack test run pairbench` (stand-alone test). Not the build-time `check`: that is
        # ctest, whose MPI and two-node tests start network namespaces as root.
        for layer in ("mpi", "verbs"):
            if self.spec.satisfies(f"+{layer}"):
                exe = which(join_path(self.prefix.bin, f"pairbench-{layer}"))
                out = exe("--list-tests", output=str.split, error=str.split)
                assert "latency" in out or "write_lat" in out, out
