/*
 * The pseudo-terminal's own ceiling (bench/terminal.mjs): runs a command under
 * a new pty (forkpty, default termios as any terminal program gets) and only
 * reads the master in 64 KiB reads, discarding the bytes, for the given
 * seconds after a 300 ms warm-up (as the taskstream and reference workers do).
 * Prints "<bytes> <seconds>". No terminal reader, in any language, can ingest
 * more than this on the same machine.
 *
 * usage: pty-ceiling <seconds> <command> [reader niceness]
 * (the command runs under /bin/sh -c at the caller's priority; with a
 * niceness, only the reader, this process, runs that much nicer after the
 * fork, as taskstream's reading thread does)
 */
#include <pty.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: %s <seconds> <command> [reader niceness]\n", argv[0]);
    return 2;
  }
  double seconds = atof(argv[1]);
  struct winsize size = {.ws_row = 40, .ws_col = 120};
  int master;
  pid_t pid = forkpty(&master, NULL, NULL, &size);
  if (pid < 0) {
    perror("forkpty");
    return 1;
  }
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", argv[2], (char *)NULL);
    _exit(127);
  }
  if (argc == 4 && setpriority(PRIO_PROCESS, 0, atoi(argv[3])) != 0) {
    perror("setpriority");
    return 1;
  }
  static char buf[65536];
  double start = now(), counting_from = start + 0.3, end = counting_from + seconds;
  unsigned long long bytes = 0;
  for (;;) {
    ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) break;
    double t = now();
    if (t >= end) break;
    if (t >= counting_from) bytes += (unsigned long long)n;
  }
  double took = now() - counting_from;
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  printf("%llu %.3f\n", bytes, took);
  return 0;
}
