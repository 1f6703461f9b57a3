/* The forced command `hostsite-shell key-<id>`, the C twin of shell.py (used when no C compiler
 * is found): it starts on every SSH command, so its start is on every push's critical path.
 *
 * Hands the session to the gateway: a JSON header (key, SSH_ORIGINAL_COMMAND, GIT_PROTOCOL, the
 * client's address) and its own fds 0, 1, 2 over the Unix socket beside it (SCM_RIGHTS), then
 * waits for the exit status and exits with it. It never runs a shell or any other program: the
 * command is data for the gateway. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define HEADER_MAX 60000

static char header[HEADER_MAX];
static size_t used;

static int put(const char *s, size_t n) {
    if (used + n >= HEADER_MAX) return -1;
    memcpy(header + used, s, n);
    used += n;
    return 0;
}

/* The length of the valid UTF-8 sequence at p (1-4), or 0 if it is not one: Python's strict
 * decoder's rules (no overlong forms, no surrogates, nothing above U+10FFFF). */
static int utf8_length(const unsigned char *p) {
    unsigned char lo = 0x80, hi = 0xbf;
    int n;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) n = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef) n = 3;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4) n = 4;
    else return 0;
    if (p[0] == 0xe0) lo = 0xa0;
    if (p[0] == 0xed) hi = 0x9f;
    if (p[0] == 0xf0) lo = 0x90;
    if (p[0] == 0xf4) hi = 0x8f;
    if (p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf) return 0;
    return n;
}

/* A JSON string (or null), as shell.py writes it: quotes, backslashes and control characters
 * escaped, valid UTF-8 as is, and each byte that is not UTF-8 as the surrogate Python's
 * surrogateescape gives it (U+DC80-U+DCFF), so the gateway reads the very same string. */
static int put_json(const char *value) {
    if (!value) return put("null", 4);
    if (put("\"", 1) < 0) return -1;
    for (const unsigned char *p = (const unsigned char *)value; *p;) {
        char esc[8];
        int n = *p >= 0x80 ? utf8_length(p) : 1;
        if (n > 1) {
            if (put((const char *)p, (size_t)n) < 0) return -1;
            p += n;
            continue;
        }
        if (*p >= 0x80) {
            snprintf(esc, sizeof(esc), "\\udc%02x", *p);
        } else if (*p == '"' || *p == '\\' || *p < 0x20) {
            snprintf(esc, sizeof(esc), "\\u%04x", *p);
        } else {
            esc[0] = (char)*p;
            esc[1] = '\0';
        }
        if (put(esc, strlen(esc)) < 0) return -1;
        p++;
    }
    return put("\"", 1);
}

static int fail(const char *message) {
    if (write(2, message, strlen(message)) < 0) return 1;
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2 || strncmp(argv[1], "key-", 4) != 0 || !argv[1][4] ||
        strspn(argv[1] + 4, "0123456789") != strlen(argv[1] + 4) || strlen(argv[1]) > 22)
        return fail("hostsite: this account only serves git over SSH\n");

    char remote[64] = "";
    const char *connection = getenv("SSH_CONNECTION");
    if (connection) {
        size_t n = strcspn(connection, " ");
        if (n >= sizeof(remote)) n = sizeof(remote) - 1;
        memcpy(remote, connection, n);
        remote[n] = '\0';
    }
    char start[64];
    snprintf(start, sizeof(start), "{\"op\": \"session\", \"key_id\": %s, \"command\": ", argv[1] + 4);
    if (put(start, strlen(start)) < 0 || put_json(getenv("SSH_ORIGINAL_COMMAND")) < 0 ||
        put(", \"protocol\": ", 14) < 0 || put_json(getenv("GIT_PROTOCOL")) < 0 ||
        put(", \"remote\": ", 12) < 0 || put_json(remote) < 0 || put("}\n", 2) < 0)
        return fail("hostsite: the command is too long\n");

    const char *slash = strrchr(argv[0], '/');
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t dir_len = slash ? (size_t)(slash - argv[0]) : 0;
    if (!slash || dir_len + sizeof("/gateway.sock") > sizeof(addr.sun_path))
        return fail("hostsite: the SSH service is unavailable, try again shortly\n");
    memcpy(addr.sun_path, argv[0], dir_len);
    memcpy(addr.sun_path + dir_len, "/gateway.sock", sizeof("/gateway.sock"));

    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    struct timeval timeout = {.tv_sec = 5};
    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    int fds[3] = {0, 1, 2};
    char control[CMSG_SPACE(sizeof(fds))];
    memset(control, 0, sizeof(control));
    struct iovec iov = {.iov_base = header, .iov_len = used};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                         .msg_controllen = sizeof(control)};
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(cmsg), fds, sizeof(fds));
    if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
        sendmsg(sock, &msg, 0) != (ssize_t)used)
        return fail("hostsite: the SSH service is unavailable, try again shortly\n");

    /* Ours are copies now; closing them lets the client see EOF as soon as the gateway's child
     * is done, not when this process exits. The session lasts as long as a clone does. */
    close(0);
    close(1);
    char status[16];
    size_t got = 0;
    while (got < sizeof(status) - 1) {
        ssize_t r = read(sock, status + got, sizeof(status) - 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
        if (status[got - 1] == '\n') break;
    }
    if (got == 0 || status[got - 1] != '\n')
        return fail("hostsite: the SSH service stopped during this session\n");
    status[got] = '\0';
    return atoi(status) & 0xff;
}
