// SPDX-License-Identifier: GPL-2.0
/*
 * Exhaustion: a process bound to one colour touches about twice the memory
 * that colour has in the whole machine.
 *
 * Strict (COLOR_MODE_BIND): the documented behaviour (page_coloring.rst,
 * "Exhaustion") is checked: the process must not get pages of other
 * colours, must not hang (a fault that keeps retrying would), and must get
 * SIGBUS (documented: like hugetlbfs with an empty pool, not an OOM loop),
 * counted in "failures", while the kernel and every other process carry
 * on, with no BUG/WARNING/Oops.
 *
 * Preferred (COLOR_MODE_PREFERRED): the allocation succeeds, the pages
 * beyond the colour's capacity come from other colours, and the fallbacks
 * counter grows.
 *
 * Afterwards free memory returns to its baseline.
 */
#include "pc_test.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define TIMEOUT	120	/* seconds; TCG is slow */

static size_t pages_per_colour(void)
{
	long long total = sysconf(_SC_PHYS_PAGES);

	return (size_t)(total / pc_nr_colors);
}

/*
 * Child: bind to colour 0 (mode), touch n pages, report how many were
 * touched and how many were outside colour 0 through the pipe, exit 0.
 */
static void child(int mode, size_t n, int fd)
{
	pagecolor_set_t s = pc_set("0");
	size_t i, done = 0, bad = 0, step = 256;
	char *p;

	p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		_exit(20);
	if (pagecolor_mbind(p, n * pc_page_size, mode, &s, 0))
		_exit(21);
	for (i = 0; i < n; i += step) {
		struct pc_check r;
		size_t k = n - i < step ? n - i : step;
		size_t progress[2];

		pc_touch(p + i * pc_page_size, k);
		done += k;
		if (pc_check_range(p + i * pc_page_size, k, &s, &r) == 0)
			bad += r.bad;
		progress[0] = done;
		progress[1] = bad;
		if (write(fd, progress, sizeof(progress)) != sizeof(progress))
			_exit(22);
	}
	_exit(0);
}

struct outcome {
	int status;		/* waitpid status, -1 if timed out */
	size_t touched, bad;
};

static struct outcome run(int mode, size_t n)
{
	struct outcome o = { -1, 0, 0 };
	int fds[2], i;
	pid_t pid;

	if (pipe(fds))
		return o;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child(mode, n, fds[1]);
	}
	close(fds[1]);
	for (i = 0; i < TIMEOUT * 10; i++) {
		size_t progress[2];
		int st;
		fd_set rs;
		struct timeval tv = { 0, 100000 };

		FD_ZERO(&rs);
		FD_SET(fds[0], &rs);
		if (select(fds[0] + 1, &rs, NULL, NULL, &tv) > 0 &&
		    read(fds[0], progress, sizeof(progress)) == sizeof(progress)) {
			o.touched = progress[0];
			o.bad = progress[1];
		}
		if (waitpid(pid, &st, WNOHANG) == pid) {
			size_t progress2[2];

			while (read(fds[0], progress2, sizeof(progress2)) ==
			       sizeof(progress2)) {
				o.touched = progress2[0];
				o.bad = progress2[1];
			}
			o.status = st;
			close(fds[0]);
			return o;
		}
	}
	tap_diag("child did not finish in %d s (touched %zu pages): killing it",
		 TIMEOUT, o.touched);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(fds[0]);
	return o;
}

static const char *describe(int st)
{
	static char buf[64];

	if (st == -1)
		return "hung";
	if (WIFEXITED(st))
		snprintf(buf, sizeof(buf), "exit %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, sizeof(buf), "signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, sizeof(buf), "status 0x%x", st);
	return buf;
}

int main(void)
{
	unsigned long long fb0 = 0, fb1 = 0, fl0 = 0, fl1 = 0;
	long long free0, free1;
	struct outcome o;
	size_t per, n;
	int trouble, have_fb;

	pc_init(9);
	per = pages_per_colour();
	n = 2 * per;
	tap_diag("about %zu pages per colour; touching %zu pages bound to colour 0", per, n);
	trouble = pc_dmesg_trouble();
	pc_settle();
	free0 = pc_memfree_pages();

	/* strict */
	pagecolor_read_counter("failures", &fl0);
	o = run(COLOR_MODE_BIND, n);
	tap_diag("BIND: %s after touching %zu pages, %zu outside colour 0",
		 describe(o.status), o.touched, o.bad);
	tap_ok(o.status != -1, "strict: the process does not hang at exhaustion");
	tap_ok(o.bad == 0, "strict: no page outside the bound colour");
	pagecolor_read_counter("failures", &fl1);
	tap_ok(o.status != -1 && WIFSIGNALED(o.status) &&
	       WTERMSIG(o.status) == SIGBUS && o.touched < n,
	       "strict: the process gets SIGBUS at exhaustion (%s)", describe(o.status));
	tap_ok(fl1 > fl0, "strict: failures counter grew (%llu -> %llu)", fl0, fl1);
	tap_ok(pc_dmesg_trouble() == trouble, "strict: no BUG/WARNING/Oops in dmesg");

	/* preferred */
	have_fb = pagecolor_read_counter("fallbacks", &fb0) == 0;
	o = run(COLOR_MODE_PREFERRED, n);
	pagecolor_read_counter("fallbacks", &fb1);
	tap_diag("PREFERRED: %s after touching %zu pages, %zu outside colour 0; "
		 "fallbacks %llu -> %llu", describe(o.status), o.touched, o.bad, fb0, fb1);
	tap_ok(o.status != -1 && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0 &&
	       o.touched == n, "preferred: all pages allocated");
	tap_ok(o.bad > 0 && o.bad < n, "preferred: falls back to other colours only "
	       "partly (%zu of %zu pages outside colour 0)", o.bad, n);
	tap_ok(have_fb && fb1 > fb0, "preferred: fallbacks counter grew by %llu",
	       fb1 - fb0);

	pc_settle();
	free1 = pc_memfree_pages();
	tap_diag("MemFree %lld -> %lld pages", free0, free1);
	tap_ok(free1 >= free0 - 1024 && pc_dmesg_trouble() == trouble,
	       "free memory back at baseline, dmesg clean");
	return tap_finish();
}
