# SPDX-License-Identifier: BSD-3-Clause
# ReFrame's idiom: checks declare lists (valid_systems, tags, keep_files) as class attributes.
# ruff: noqa: RUF012
"""pairbench checks for a site's ReFrame suite (docs/integrations.md). Every knob is a
variable (`-S pb_tests=latency,bw -S sizes=8,4K -S reference_file=ref.json`) or a
parameter (`-P pairs=1,2,4,8`); the library is ../pairbench_rfm.py."""

import os
import sys

import reframe as rfm
from reframe.core.builtins import parameter, run_after

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pairbench_rfm import PairbenchFabricScan, PairbenchMpi


@rfm.simple_test
class pairbench_mpi_node(PairbenchMpi):
    """Pairs inside one node (shared memory or the node's loopback path)."""

    pb_pairs = parameter([1, 2])
    tags = {"pairbench", "mpi"}

    @run_after("init")
    def set_pairs(self):
        self.pairs = self.pb_pairs
        self.num_nodes = 1


@rfm.simple_test
class pairbench_mpi_2node(PairbenchMpi):
    """Pairs across two nodes: every pair crosses the interconnect (side A on the first
    node). Only on partitions that say they have several nodes (feature `multinode`)."""

    pb_pairs = parameter([1, 2])
    valid_systems = ["+multinode"]
    tags = {"pairbench", "mpi", "interconnect"}

    @run_after("init")
    def set_pairs(self):
        self.pairs = self.pb_pairs
        self.num_nodes = 2


@rfm.simple_test
class pairbench_fabric_scan(PairbenchFabricScan):
    """Every node pair of `num_nodes` nodes once (fabric scan)."""

    valid_systems = ["+multinode"]
    tags = {"pairbench", "mpi", "fabric"}
