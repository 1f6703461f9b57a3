/* AuthorizedKeysCommand: `hostsite-keys %u %f %t %k`, the C twin of keys_command.py (used when
 * no C compiler is found). sshd runs it twice for every key a client offers (the probe, then the
 * signed request), and a Python interpreter's start costs 10-17 ms each time on these machines
 * against 1-2 ms here: on a small push that is most of what we may add over plain OpenSSH.
 *
 * Asks the gateway (sshgit/gateway.py) over the Unix socket beside this program for the key
 * with that fingerprint; when it is usable and the stored type and blob are the ones offered,
 * prints one authorized_keys line forcing hostsite-shell. Anything else prints nothing (sshd
 * refuses the key); errors go to stderr, which sshd logs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define ANSWER_MAX 65536

static char answer[ANSWER_MAX];

static int fingerprint_ok(const char *s) {
    static const char allowed[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=:";
    size_t n = strlen(s);
    return n > 0 && n < 200 && strspn(s, allowed) == n;
}

static int write_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fputs("hostsite-keys: expected arguments %u %f %t %k\n", stderr);
        return 0;
    }
    const char *fingerprint = argv[2], *key_type = argv[3], *key_data = argv[4];
    if (!fingerprint_ok(fingerprint)) return 0;

    /* The socket and hostsite-shell live beside this program (sshd runs it by absolute path). */
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    const char *slash = strrchr(argv[0], '/');
    size_t dir_len = slash ? (size_t)(slash - argv[0]) : 0;
    if (!slash || dir_len + sizeof("/gateway.sock") > sizeof(dir)) {
        fputs("hostsite-keys: run by an absolute path of a short directory\n", stderr);
        return 0;
    }
    memcpy(dir, argv[0], dir_len);
    dir[dir_len] = '\0';

    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, dir, dir_len);
    memcpy(addr.sun_path + dir_len, "/gateway.sock", sizeof("/gateway.sock"));
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    /* sshd waits on us while the client waits on sshd: never hang. */
    struct timeval timeout = {.tv_sec = 2};
    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        fprintf(stderr, "hostsite-keys: the gateway did not answer at %s: %s\n", addr.sun_path,
                strerror(errno));
        return 0;
    }
    /* JSON by hand: the fingerprint's characters were checked, none needs escaping. */
    char request[300];
    int len = snprintf(request, sizeof(request), "{\"op\": \"key\", \"fingerprint\": \"%s\"}\n",
                       fingerprint);
    if (write_all(sock, request, (size_t)len) < 0) {
        fprintf(stderr, "hostsite-keys: could not ask the gateway: %s\n", strerror(errno));
        return 0;
    }
    size_t got = 0;
    while (got == 0 || answer[got - 1] != '\n') {
        if (got >= ANSWER_MAX - 1) return 0;
        ssize_t r = read(sock, answer + got, ANSWER_MAX - 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            fputs("hostsite-keys: the gateway closed the connection without an answer\n", stderr);
            return 0;
        }
        got += (size_t)r;
    }
    close(sock);
    answer[got - 1] = '\0';

    /* `<id> <type> <base64 blob>`, or an empty line for no usable key. */
    char *id = answer, *type = strchr(id, ' ');
    if (!type) return 0;
    *type++ = '\0';
    char *data = strchr(type, ' ');
    if (!data) return 0;
    *data++ = '\0';
    if (!*id || strspn(id, "0123456789") != strlen(id) || strlen(id) > 18) return 0;
    if (strcmp(type, key_type) != 0 || strcmp(data, key_data) != 0) return 0;
    /* `restrict`: no PTY, no forwarding of any kind, no ~/.ssh/rc, whatever sshd_config says. */
    printf("command=\"%s/hostsite-shell key-%s\",restrict %s %s\n", dir, id, key_type, key_data);
    return 0;
}
