/*
 * The protocol fuzz's runner process: relays its stdin to the player's Unix socket and the socket to its stdout,
 * losing nothing, and exits when the player hangs up, as a runner exits after its last write (test/campaigns/fuzz).
 * Unlike `socat -t`, it has no cut-off: when the host closes stdin it half-closes the socket and still relays all the
 * player writes; when the player stops reading, the host's bytes are dropped and the player's still relayed.
 * Usage: bridge <socket path>. Built by fuzz/bridge.ts with the system C compiler.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Write all of buf; -1 when the other end is gone. */
static int write_all(int fd, const char *buf, ssize_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, (size_t)n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    buf += w;
    n -= w;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (argc != 2 || strlen(argv[1]) >= sizeof addr.sun_path) {
    fprintf(stderr, "usage: bridge <socket path>\n");
    return 2;
  }
  /* Writing to a peer that left must be an error to handle, not a signal that kills the bridge. */
  signal(SIGPIPE, SIG_IGN);
  strcpy(addr.sun_path, argv[1]);
  int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof addr) < 0) {
    fprintf(stderr, "bridge: connect %s: %s\n", argv[1], strerror(errno));
    return 2;
  }
  static char buf[65536];
  int relay_stdin = 1;
  for (;;) {
    struct pollfd fds[2] = {{.fd = sock, .events = POLLIN}, {.fd = relay_stdin ? 0 : -1, .events = POLLIN}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      perror("bridge: poll");
      return 2;
    }
    if (fds[0].revents) {
      ssize_t n = read(sock, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      /* The player hung up (everything it wrote is already on stdout): the runner exits. */
      if (n <= 0) return 0;
      /* The host closed our stdout: nobody is listening any more. */
      if (write_all(1, buf, n) < 0) return 1;
    }
    if (fds[1].revents) {
      ssize_t n = read(0, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        /* The host closed stdin: tell the player, and keep relaying what it still writes. */
        shutdown(sock, SHUT_WR);
        relay_stdin = 0;
      } else if (write_all(sock, buf, n) < 0) {
        relay_stdin = 0;
      }
    }
  }
}
