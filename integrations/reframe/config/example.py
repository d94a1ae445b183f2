# SPDX-License-Identifier: BSD-3-Clause
"""A ReFrame configuration for pairbench's checks: this machine (local scheduler, mpirun) and
an emulated Slurm cluster (scripts/slurm-emulated: sbatch + srun --mpi=pmix). A site adds
the `extras` and `features` below to its own partitions instead (docs/integrations.md)."""

import os

_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
         # more ranks than cores here: a waiting rank yields its core
         "OMPI_MCA_mpi_yield_when_idle": "1"}

site_configuration = {
    "systems": [
        {
            "name": "pbhost",
            "descr": "this machine, one node: local scheduler, Open MPI's mpirun",
            "hostnames": [".*"],
            "partitions": [{
                "name": "default",
                "scheduler": "local",
                "launcher": "mpirun",
                "environs": ["pbenv"],
                "env_vars": [[k, v] for k, v in _ROOT.items()],
                # every launch: more ranks than cores is fine here; pairbench pins (or not)
                "extras": {"pairbench_launcher_options": ["--oversubscribe", "--bind-to",
                                                          "none"]},
                "max_jobs": 1,
            }],
        },
        {
            "name": "pbslurm",
            "descr": "emulated Slurm cluster (scripts/slurm-emulated): sbatch, srun",
            "hostnames": [".*"],
            "partitions": [{
                "name": "nodes",
                # squeue: ReFrame's Slurm backend for clusters without accounting (sacct)
                "scheduler": "squeue",
                "launcher": "srun",
                "environs": ["pbenv"],
                "features": ["multinode"],
                "max_jobs": 1,
                # Debian's Open MPI has no PMI-2 client: srun needs --mpi=pmix (docs/slurm.md)
                "extras": {"pairbench_launcher_options": ["--mpi=pmix"]},
            }],
        },
    ],
    "environments": [{"name": "pbenv", "cc": "cc"}],
    # ReFrame's default log is a new /tmp/rfm-*.log per session, never removed: name it
    "logging": [{
        "level": "debug",
        "handlers": [
            {"type": "stream", "name": "stdout", "level": "info", "format": "%(message)s"},
            {"type": "file", "name": os.environ.get("PB_RFM_LOG", "reframe.log"),
             "level": "debug", "append": False,
             "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s"},
        ],
        "handlers_perflog": [{
            "type": "filelog", "prefix": "%(check_system)s/%(check_partition)s",
            "level": "info", "append": True,
            "format": "%(check_job_completion_time)s|%(check_info)s|%(check_perfvalues)s",
            "format_perfvars": "%(check_perf_var)s=%(check_perf_value)s %(check_perf_unit)s "
                               "(ref %(check_perf_ref)s)|"}],
    }],
    "general": [{"check_search_recursive": True,
                 "report_file": os.environ.get("PB_RFM_REPORT",
                                               "${HOME}/.reframe/reports/run-report-{sessionid}.json")}],
}
