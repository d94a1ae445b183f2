/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-variable experiment (issue 16, results/mpi-peer-comparison/README.md): what in a
 * ping-pong loop costs time at 8 B on shared memory?  Separate send and receive buffers
 * (the peer layout) in every variant; the variants alternate in blocks of n round trips:
 *   block    IMB/OSU style: one clock read before and after the block, mean = total / n / 2
 *   stamps   pairbench style: two CLOCK_MONOTONIC_RAW reads per round trip, a sample each
 *            (mean of the samples / 2) -- also reports that block's total / n / 2
 *   anytag   as block, but B receives with MPI_ANY_TAG and a status (pairbench's B side)
 * Prints, per block, the mean half round trip of each variant in microseconds.
 * Pairbench's own code, not a peer's.  Build: mpicc -O2 -o pingpong_loop pingpong_loop.c
 * Run: mpirun -np 2 --bind-to core ./pingpong_loop [bytes] [n] [blocks]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

enum { BLOCK, STAMPS, ANYTAG };

/* Returns A's mean half round trip (us); *block_us: total / n / 2 of the same block. */
static double run(int mode, int rank, char *s, char *r, int bytes, int n, uint64_t *samples,
		  double *block_us)
{
	MPI_Status st;
	double sum = 0;
	uint64_t t0, t1, start;

	MPI_Barrier(MPI_COMM_WORLD);
	start = now_ns();
	for (int i = 0; i < n; i++) {
		if (rank == 0) {
			if (mode == STAMPS)
				t0 = now_ns();
			MPI_Send(s, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(r, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (mode == STAMPS) {
				t1 = now_ns();
				samples[i] = (t1 - t0) / 2;
			}
		} else if (mode == ANYTAG) {
			MPI_Recv(r, bytes, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
			MPI_Send(s, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		} else {
			MPI_Recv(r, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(s, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
	}
	*block_us = (double)(now_ns() - start) / n / 2 / 1e3;
	if (mode != STAMPS)
		return *block_us;
	for (int i = 0; i < n; i++)
		sum += (double)samples[i];
	return sum / n / 1e3;
}

int main(int argc, char **argv)
{
	int bytes = argc > 1 ? atoi(argv[1]) : 8, n = argc > 2 ? atoi(argv[2]) : 10000;
	int blocks = argc > 3 ? atoi(argv[3]) : 7, rank;
	char *s = malloc((size_t)bytes), *r = malloc((size_t)bytes);
	uint64_t *samples = calloc((size_t)n, sizeof(*samples));
	double b;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	memset(s, 1, (size_t)bytes);
	memset(r, 0, (size_t)bytes);
	for (int m = BLOCK; m <= ANYTAG; m++)
		run(m, rank, s, r, bytes, n / 10, samples, &b); /* warm-up */
	for (int k = 0; k < blocks; k++) {
		double blk = run(BLOCK, rank, s, r, bytes, n, samples, &b);
		double stm = run(STAMPS, rank, s, r, bytes, n, samples, &b);
		double stm_block = b;
		double any = run(ANYTAG, rank, s, r, bytes, n, samples, &b);

		if (rank == 0)
			printf("%d block %.4f stamps %.4f stamps_block %.4f anytag %.4f\n", bytes, blk,
			       stm, stm_block, any);
	}
	MPI_Finalize();
	free(samples);
	free(s);
	free(r);
	return 0;
}
