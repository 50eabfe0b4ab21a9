/* A fake libnccl.so.2 for the CPU tier: the NCCL C API that pygpukit.distributed binds, with
 * every call appended to a log (read back with fake_nccl_log()) and failures injected on demand
 * (fake_nccl_fail).  Collectives act on host memory as if every rank held the same data and the
 * reduction were a copy: with one rank that is what NCCL computes for every op.  Built by the
 * tests with the C compiler; nothing here needs CUDA. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char internal[128]; } ncclUniqueId;
typedef struct fake_comm {
    int nranks, rank, device, aborted, destroyed;
} *ncclComm_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[1 << 16];
static size_t log_len;
static char fail_name[64];
static int fail_code;
static int async_error;
static int group_depth;
static int pending_group_error;  /* an error inside a group, reported by ncclGroupEnd */
static char last_error[256] = "";
static int current_device;  /* what cudaGetDevice would answer: set by the test */

static void record(const char *fmt, ...) {
    va_list ap;
    pthread_mutex_lock(&mu);
    va_start(ap, fmt);
    int n = vsnprintf(log_buf + log_len, sizeof log_buf - log_len, fmt, ap);
    va_end(ap);
    if (n > 0 && log_len + (size_t)n + 1 < sizeof log_buf) {
        log_len += (size_t)n;
        log_buf[log_len++] = '\n';
        log_buf[log_len] = '\0';
    }
    pthread_mutex_unlock(&mu);
}

/* The injected result for `name` (once), else 0. */
static int injected(const char *name) {
    if (fail_code != 0 && strcmp(name, fail_name) == 0) {
        int code = fail_code;
        fail_code = 0;
        snprintf(last_error, sizeof last_error, "fake: %s failed as the test asked", name);
        return code;
    }
    return 0;
}

/* ---- test controls -------------------------------------------------------------------- */
const char *fake_nccl_log(void) { return log_buf; }
void fake_nccl_reset(void) {
    log_len = 0; log_buf[0] = '\0'; fail_code = 0; async_error = 0; group_depth = 0; pending_group_error = 0;
    last_error[0] = '\0'; current_device = 0;
}
void fake_nccl_fail(const char *name, int code) {
    snprintf(fail_name, sizeof fail_name, "%s", name);
    fail_code = code;
}
void fake_nccl_set_async_error(int code) { async_error = code; }
void fake_nccl_set_device(int device) { current_device = device; }
int fake_nccl_group_depth(void) { return group_depth; }

/* ---- the API ---------------------------------------------------------------------------- */
static size_t type_size(int t) {
    static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
    return (t >= 0 && t < 10) ? sizes[t] : 0;
}

int ncclGetVersion(int *version) {
    record("ncclGetVersion");
    *version = 22805;
    return injected("ncclGetVersion");
}

const char *ncclGetErrorString(int result) {
    switch (result) {
    case 0: return "no error";
    case 1: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case 2: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case 3: return "internal error - please report this issue to the NCCL developers";
    case 4: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case 5: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case 6: return "remote process exited or there was a network error";
    default: return "unknown result code";
    }
}

const char *ncclGetLastError(ncclComm_t comm) { (void)comm; return last_error; }

int ncclGetUniqueId(ncclUniqueId *id) {
    record("ncclGetUniqueId");
    int rc = injected("ncclGetUniqueId");
    if (rc) return rc;
    for (int i = 0; i < 128; i++) id->internal[i] = (char)(i * 7);  /* NULs at 0 and 128 */
    return 0;
}

static ncclComm_t new_comm(int nranks, int rank, int device) {
    ncclComm_t c = calloc(1, sizeof *c);
    c->nranks = nranks; c->rank = rank; c->device = device;
    return c;
}

int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    unsigned sum = 0;
    for (int i = 0; i < 128; i++) sum += (unsigned char)id.internal[i];
    record("ncclCommInitRank nranks=%d rank=%d id0=%u id127=%u idsum=%u device=%d", nranks, rank,
           (unsigned char)id.internal[0], (unsigned char)id.internal[127], sum, current_device);
    int rc = injected("ncclCommInitRank");
    if (rc) { *comm = NULL; return rc; }
    if (nranks < 1 || rank < 0 || rank >= nranks) return 4;
    *comm = new_comm(nranks, rank, current_device);
    return 0;
}

int ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
    char devs[256] = "";
    size_t used = 0;
    for (int i = 0; i < ndev && used < sizeof devs - 16; i++)
        used += (size_t)snprintf(devs + used, sizeof devs - used, "%s%d", i ? "," : "",
                                 devlist ? devlist[i] : i);
    record("ncclCommInitAll ndev=%d devlist=%s", ndev, devs);
    int rc = injected("ncclCommInitAll");
    if (rc) return rc;
    for (int i = 0; i < ndev; i++) comms[i] = new_comm(ndev, i, devlist ? devlist[i] : i);
    return 0;
}

int ncclCommDestroy(ncclComm_t comm) {
    record("ncclCommDestroy rank=%d", comm->rank);
    int rc = injected("ncclCommDestroy");
    free(comm);
    return rc;
}

int ncclCommAbort(ncclComm_t comm) {
    record("ncclCommAbort rank=%d", comm->rank);
    free(comm);
    return 0;
}

int ncclCommGetAsyncError(ncclComm_t comm, int *result) {
    record("ncclCommGetAsyncError rank=%d", comm->rank);
    *result = async_error;
    return injected("ncclCommGetAsyncError");
}

int ncclCommCount(ncclComm_t comm, int *count) { *count = comm->nranks; return 0; }
int ncclCommCuDevice(ncclComm_t comm, int *device) { *device = comm->device; return 0; }
int ncclCommUserRank(ncclComm_t comm, int *rank) { *rank = comm->rank; return 0; }

/* In a group, errors surface at ncclGroupEnd, as in NCCL. */
static int finish(const char *name) {
    int rc = injected(name);
    if (rc && group_depth > 0) { pending_group_error = rc; return 0; }
    return rc;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int op,
                  ncclComm_t comm, void *stream) {
    record("ncclAllReduce send=%p recv=%p count=%zu dtype=%d op=%d rank=%d stream=%p", send, recv,
           count, dtype, op, comm->rank, stream);
    if (send != recv) memmove(recv, send, count * type_size(dtype));
    return finish("ncclAllReduce");
}

int ncclBroadcast(const void *send, void *recv, size_t count, int dtype, int root,
                  ncclComm_t comm, void *stream) {
    record("ncclBroadcast send=%p recv=%p count=%zu dtype=%d root=%d rank=%d stream=%p", send,
           recv, count, dtype, root, comm->rank, stream);
    if (send != recv) memmove(recv, send, count * type_size(dtype));
    return finish("ncclBroadcast");
}

int ncclReduce(const void *send, void *recv, size_t count, int dtype, int op, int root,
               ncclComm_t comm, void *stream) {
    record("ncclReduce send=%p recv=%p count=%zu dtype=%d op=%d root=%d rank=%d stream=%p", send,
           recv, count, dtype, op, root, comm->rank, stream);
    if (send != recv && comm->rank == root) memmove(recv, send, count * type_size(dtype));
    return finish("ncclReduce");
}

int ncclAllGather(const void *send, void *recv, size_t sendcount, int dtype, ncclComm_t comm,
                  void *stream) {
    record("ncclAllGather send=%p recv=%p count=%zu dtype=%d rank=%d stream=%p", send, recv,
           sendcount, dtype, comm->rank, stream);
    size_t bytes = sendcount * type_size(dtype);
    for (int r = 0; r < comm->nranks; r++) memmove((char *)recv + (size_t)r * bytes, send, bytes);
    return finish("ncclAllGather");
}

int ncclReduceScatter(const void *send, void *recv, size_t recvcount, int dtype, int op,
                      ncclComm_t comm, void *stream) {
    record("ncclReduceScatter send=%p recv=%p count=%zu dtype=%d op=%d rank=%d stream=%p", send,
           recv, recvcount, dtype, op, comm->rank, stream);
    size_t bytes = recvcount * type_size(dtype);
    memmove(recv, (const char *)send + (size_t)comm->rank * bytes, bytes);
    return finish("ncclReduceScatter");
}

int ncclSend(const void *send, size_t count, int dtype, int peer, ncclComm_t comm, void *stream) {
    record("ncclSend send=%p count=%zu dtype=%d peer=%d rank=%d stream=%p", send, count, dtype,
           peer, comm->rank, stream);
    return finish("ncclSend");
}

int ncclRecv(void *recv, size_t count, int dtype, int peer, ncclComm_t comm, void *stream) {
    record("ncclRecv recv=%p count=%zu dtype=%d peer=%d rank=%d stream=%p", recv, count, dtype,
           peer, comm->rank, stream);
    return finish("ncclRecv");
}

int ncclGroupStart(void) {
    record("ncclGroupStart");
    group_depth++;
    return injected("ncclGroupStart");
}

int ncclGroupEnd(void) {
    record("ncclGroupEnd");
    group_depth--;
    int rc = injected("ncclGroupEnd");
    if (!rc && group_depth == 0 && pending_group_error) rc = pending_group_error;
    if (group_depth == 0) pending_group_error = 0;
    return rc;
}
