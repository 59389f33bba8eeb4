/* The trivial MPI program of the launch benchmark and the wide-job tests: every rank says
 * which pod it runs in and, under the ssh transport, from which address its daemon was
 * started (SSH_CLIENT, set by sshd): the master's for daemons it started itself, a worker's
 * for those Open MPI started from another daemon (tree spawn). One write per line. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, len;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    const char *client = getenv("SSH_CLIENT");
    char from[64] = "-";
    if (client) { strncpy(from, client, sizeof from - 1); from[strcspn(from, " ")] = 0; }
    printf("rank %d of %d on %s via %s\n", rank, size, host, from);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
