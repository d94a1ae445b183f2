/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-variable experiment (issue 16, results/mpi-peer-comparison/README.md): does the reduction
 * datatype explain why IMB Allreduce at 64 KiB is above pairbench?  IMB always reduces
 * MPI_FLOAT (16384 elements at 64 KiB), pairbench MPI_DOUBLE (8192).  The same loop, IMB's
 * -sync on style (call timed alone, a barrier after it outside the timer), is run with both
 * datatypes, alternating in blocks; prints per datatype the max over ranks of the per-rank
 * mean call time (IMB's t_max), microseconds.  Pairbench's own code, not a peer's.
 * Build: mpicc -O2 -o allreduce_dtype allreduce_dtype.c
 * Run:   mpirun -np 2 ./allreduce_dtype [bytes] [iterations] [blocks]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double block(MPI_Datatype dt, int esize, int bytes, int iters, char *s, char *r)
{
	double t = 0, tmax;

	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < iters; i++) {
		double t0 = MPI_Wtime();

		MPI_Allreduce(s, r, bytes / esize, dt, MPI_SUM, MPI_COMM_WORLD);
		t += MPI_Wtime() - t0;
		MPI_Barrier(MPI_COMM_WORLD);
	}
	t /= iters;
	MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	return tmax * 1e6;
}

int main(int argc, char **argv)
{
	int bytes = argc > 1 ? atoi(argv[1]) : 65536, iters = argc > 2 ? atoi(argv[2]) : 2000;
	int blocks = argc > 3 ? atoi(argv[3]) : 5, rank;
	char *s = malloc((size_t)bytes), *r = malloc((size_t)bytes);

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	memset(s, 0, (size_t)bytes);
	memset(r, 0, (size_t)bytes);
	block(MPI_FLOAT, 4, bytes, iters / 10, s, r); /* warm-up */
	block(MPI_DOUBLE, 8, bytes, iters / 10, s, r);
	for (int b = 0; b < blocks; b++) {
		double f = block(MPI_FLOAT, 4, bytes, iters, s, r);
		double d = block(MPI_DOUBLE, 8, bytes, iters, s, r);

		if (rank == 0)
			printf("%d float %.4f double %.4f\n", bytes, f, d);
	}
	MPI_Finalize();
	free(s);
	free(r);
	return 0;
}
