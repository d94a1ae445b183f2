#!/usr/bin/env bash
# How results/integrations/spack-install.log was made: Spack (a git snapshot, no network)
# installs pairbench from the local source tree with the system packages as externals.
# Paths outside the repository: SPACK_ROOT (the snapshot's work tree), SPACK_PYTHON (a venv
# with clingo from PyPI, so Spack needs no bootstrapping), PYDEPS (a venv holding the driver's
# Python dependencies, declared as the py-* externals), SPACK_USER_CONFIG_PATH.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
: "${SPACK_ROOT:=/work/spack-tree}" "${PYDEPS:=/work/spack-pydeps}"
export SPACK_PYTHON=${SPACK_PYTHON:-/work/spack-venv/bin/python}
export SPACK_USER_CONFIG_PATH=${SPACK_USER_CONFIG_PATH:-/work/spack-user}
export SPACK_USER_CACHE_PATH=$SPACK_USER_CONFIG_PATH/cache
spack() { echo "+ spack $*"; "$SPACK_ROOT/bin/spack" "$@"; }
pyver() { "$PYDEPS/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))"; }
mkdir -p "$SPACK_USER_CONFIG_PATH"
cat > "$SPACK_USER_CONFIG_PATH/config.yaml" <<CFG
config:
  install_tree: {root: $SPACK_USER_CONFIG_PATH/opt}
  build_stage: [$SPACK_USER_CONFIG_PATH/stage]
  source_cache: $SPACK_USER_CONFIG_PATH/sources
  misc_cache: $SPACK_USER_CONFIG_PATH/cache
  build_jobs: 2
CFG
cat > "$SPACK_USER_CONFIG_PATH/bootstrap.yaml" <<CFG
bootstrap:
  enable: false
CFG
ext() { printf '  %s:\n    buildable: false\n    externals:\n    - spec: %s\n      prefix: %s\n' "$1" "$2" "$3"; }
{
  echo "packages:"
  echo "  mpi: {require: [openmpi]}"
  ext cmake "cmake@$(cmake --version | awk 'NR==1{print $3}')" /usr
  ext gmake "gmake@$(make --version | awk 'NR==1{print $3}')" /usr
  ext pkgconf "pkgconf@$(pkgconf --version)" /usr
  ext pkg-config "pkgconf@$(pkgconf --version)" /usr
  ext hwloc "hwloc@$(dpkg-query -W -f '${Version}' libhwloc-dev | cut -d- -f1)" /usr
  ext openmpi "openmpi@$(dpkg-query -W -f '${Version}' libopenmpi-dev | cut -d- -f1)" /usr
  ext rdma-core "rdma-core@$(dpkg-query -W -f '${Version}' rdma-core | cut -d- -f1)" /usr
  ext python "python@$(/usr/bin/python3 -c 'import platform; print(platform.python_version())')" /usr
  ext py-pip "py-pip@$(/usr/bin/python3 -c 'import pip; print(pip.__version__)')" /usr
  ext py-setuptools "py-setuptools@$(/usr/bin/python3 -c 'import setuptools; print(setuptools.__version__)')" /usr
  for p in pandas numpy matplotlib rich scipy jinja2 pyarrow; do
    ext "py-$p" "py-$p@$(pyver "$p")" "$PYDEPS"
  done
} > "$SPACK_USER_CONFIG_PATH/packages.yaml"
cat "$SPACK_USER_CONFIG_PATH/packages.yaml"
spack --version
git -C "$SPACK_ROOT" log -1 --format='spack snapshot %H %cd' 2>/dev/null || true
spack compiler find
spack repo add --scope user "$REPO/integrations/spack" || true
spack audit packages pairbench
spack spec -I pairbench@main
rm -rf "$SPACK_USER_CONFIG_PATH/stage"
# dev-build: the source is the local tree (its committed HEAD, copied out, because dev-build
# writes its build directory and logs into the source directory), nothing is fetched;
# no --test: Spack's build-time check of a CMake package is ctest, whose MPI and two-node tests
# start network namespaces; the recipe's own test (--list-tests) is `spack test run` below.
SRC=$SPACK_USER_CONFIG_PATH/src/pairbench
rm -rf "$SRC"; mkdir -p "$SRC"; git -C "$REPO" archive HEAD | tar -x -C "$SRC"
echo "source: $(git -C "$REPO" rev-parse HEAD) (git archive HEAD of $REPO)"
spack uninstall -y --all pairbench || true
spack dev-build -d "$SRC" pairbench@main
spack find -lv pairbench
spack test run pairbench
prefix=$("$SPACK_ROOT/bin/spack" location -i pairbench)
echo "+ $prefix/bin/pairbench-mpi --list-tests"; "$prefix/bin/pairbench-mpi" --list-tests
echo "+ $prefix/bin/pairbench-verbs --list-tests"; "$prefix/bin/pairbench-verbs" --list-tests
ls "$prefix/bin"
echo "+ spack load pairbench; pairbench --version; pairbench reframe (a CSV the installed pairbench-mpi wrote)"
eval "$("$SPACK_ROOT/bin/spack" load --sh pairbench)"; which pairbench pairbench-mpi; pairbench --version
tmp=$(mktemp -d)
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 --oversubscribe \
    pairbench-mpi --test latency -s 8,4K --pin none -q -o "$tmp/data.csv"
pairbench reframe "$tmp/data.csv" --format values
rm -rf "$tmp"
