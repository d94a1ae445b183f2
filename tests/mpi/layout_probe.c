/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test helper (issue 16), LD_PRELOADed into pairbench-mpi by mpi_check.py `layout`: wraps
 * MPI_Send/MPI_Isend/MPI_Recv/MPI_Irecv through the MPI profiling interface (PMPI) and
 * records the distinct (address, bytes) ranges each rank sends from and receives into
 * (payload messages only: count > 0).  At MPI_Finalize every rank writes
 * $PB_LAYOUT_PROBE_DIR/rank-N.txt: one line "send|recv ADDRESS BYTES" per distinct range.
 * The checker then sees which buffers the timed loops really used, whatever the code says.
 * Not part of pairbench: never linked into it.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PROBE_MAX 4096

struct probe_range {
	uintptr_t addr;
	int bytes;
};

struct probe_set {
	struct probe_range r[PROBE_MAX];
	int n;
	int overflow;
};

static struct probe_set probe_send, probe_recv;

static void probe_add(struct probe_set *s, const void *buf, int count, MPI_Datatype type)
{
	int size = 0;

	if (count <= 0 || !buf)
		return;
	PMPI_Type_size(type, &size);
	for (int i = 0; i < s->n; i++) {
		if (s->r[i].addr == (uintptr_t)buf && s->r[i].bytes == count * size)
			return;
	}
	if (s->n == PROBE_MAX) {
		s->overflow = 1;
		return;
	}
	s->r[s->n].addr = (uintptr_t)buf;
	s->r[s->n].bytes = count * size;
	s->n++;
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
	probe_add(&probe_send, buf, count, type);
	return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
	      MPI_Request *req)
{
	probe_add(&probe_send, buf, count, type);
	return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm,
	     MPI_Status *st)
{
	probe_add(&probe_recv, buf, count, type);
	return PMPI_Recv(buf, count, type, src, tag, comm, st);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm,
	      MPI_Request *req)
{
	probe_add(&probe_recv, buf, count, type);
	return PMPI_Irecv(buf, count, type, src, tag, comm, req);
}

static void probe_write(FILE *f, const char *what, const struct probe_set *s)
{
	for (int i = 0; i < s->n; i++)
		fprintf(f, "%s 0x%llx %d\n", what, (unsigned long long)s->r[i].addr, s->r[i].bytes);
	if (s->overflow)
		fprintf(f, "%s overflow 0\n", what);
}

int MPI_Finalize(void)
{
	const char *dir = getenv("PB_LAYOUT_PROBE_DIR");
	char path[4096];
	int rank = -1;
	FILE *f;

	PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
	snprintf(path, sizeof(path), "%s/rank-%d.txt", dir ? dir : ".", rank);
	f = fopen(path, "w");
	if (f) {
		probe_write(f, "send", &probe_send);
		probe_write(f, "recv", &probe_recv);
		fclose(f);
	}
	return PMPI_Finalize();
}
