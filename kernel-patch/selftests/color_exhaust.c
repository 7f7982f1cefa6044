// SPDX-License-Identifier: GPL-2.0
/*
 * Exhaustion: a process bound to one colour touches about twice the memory
 * that colour has in the whole machine.
 *
 * Strict (COLOR_MODE_BIND), as page_coloring.rst documents: the process
 * never holds pages of other colours, does not hang (a fault that keeps
 * retrying would), and gets SIGBUS (like hugetlbfs with an empty pool, not
 * an OOM loop), counted in "failures"; the kernel and every other process
 * carry on, with no BUG/WARNING/Oops.
 *
 * Preferred (COLOR_MODE_PREFERRED): the allocation succeeds, the pages
 * beyond the colour's capacity come from other colours, and the fallbacks
 * counter grows.
 *
 * The child catches SIGBUS, then checks the colours of everything it
 * touched (the whole range, at the end: pages moved after their fault,
 * e.g. by compaction, are caught too), and reports through a pipe.
 * Afterwards free memory returns to its baseline.
 */
#include "pc_test.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/wait.h>

#define TIMEOUT		180	/* seconds; TCG is slow */
#define EXIT_SIGBUS	42

static sigjmp_buf jb;
static volatile size_t touched;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct report {
	size_t touched, bad, absent, dup;
	int distinct;
};

/*
 * Child: bind [p, p + n pages) to colour 0 with @mode, touch it page by
 * page, then report and exit EXIT_SIGBUS (SIGBUS caught) or 0.
 */
static void child(int mode, size_t n, int fd, const char *list)
{
	pagecolor_set_t s = pc_set(list);
	struct report rep = { 0, 0, 0, 0, 0 };
	struct sigaction sa;
	struct pc_check r;
	volatile int got_sigbus = 0;
	uint64_t *pfns;
	char *p;
	size_t j;

	p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	pfns = calloc(n, sizeof(*pfns));
	if (p == MAP_FAILED || !pfns)
		_exit(20);
	if (pagecolor_mbind(p, n * pc_page_size, mode, &s, 0))
		_exit(21);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigaction(SIGBUS, &sa, NULL);
	if (sigsetjmp(jb, 1) == 0) {
		for (touched = 0; touched < n; touched++)
			p[touched * pc_page_size] = 1;
	} else {
		got_sigbus = 1;
	}
	rep.touched = touched;
	if (pc_check_range(p, touched, &s, &r) == 0) {
		rep.bad = r.bad;
		rep.absent = r.absent;
		rep.distinct = r.distinct;
	}
	if (pagecolor_pfns(p, touched, pfns) == 0) {
		qsort(pfns, touched, sizeof(*pfns), cmp_u64);
		for (j = 1; j < touched; j++)
			if (pfns[j] && pfns[j] == pfns[j - 1])
				rep.dup++;
	}
	if (rep.bad) {
		/* the kernel's own view of the range, for the log */
		char line[8192], hex[32];
		FILE *f = fopen("/proc/self/color_maps", "r");

		snprintf(hex, sizeof(hex), "%lx-", (unsigned long)p);
		while (f && fgets(line, sizeof(line), f))
			if (strncmp(line, hex, strlen(hex)) == 0)
				printf("# color_maps: %.200s...\n", line);
		if (f)
			fclose(f);
		fflush(stdout);
	}
	if (write(fd, &rep, sizeof(rep)) != sizeof(rep))
		_exit(22);
	_exit(got_sigbus ? EXIT_SIGBUS : 0);
}

struct outcome {
	int status;		/* waitpid status, -1 if timed out */
	struct report rep;
};

static struct outcome run(int mode, size_t n, const char *list)
{
	struct outcome o;
	int fds[2], i, st;
	pid_t pid;

	memset(&o, 0, sizeof(o));
	o.status = -1;
	if (pipe(fds))
		return o;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child(mode, n, fds[1], list);
	}
	close(fds[1]);
	for (i = 0; i < TIMEOUT * 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			if (read(fds[0], &o.rep, sizeof(o.rep)) != sizeof(o.rep))
				tap_diag("no report from the child");
			o.status = st;
			close(fds[0]);
			return o;
		}
		usleep(100 * 1000);
	}
	tap_diag("child did not finish in %d s: killing it", TIMEOUT);
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
	if (WIFEXITED(st) && WEXITSTATUS(st) == EXIT_SIGBUS)
		return "SIGBUS";
	if (WIFEXITED(st))
		snprintf(buf, sizeof(buf), "exit %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, sizeof(buf), "killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, sizeof(buf), "status 0x%x", st);
	return buf;
}

static void show(const char *what, struct outcome *o, size_t n)
{
	tap_diag("%s: %s after touching %zu of %zu pages: %zu outside the set, "
		 "%zu absent, %d distinct colours, %zu frames mapped twice",
		 what, describe(o->status), o->rep.touched, n, o->rep.bad,
		 o->rep.absent, o->rep.distinct, o->rep.dup);
}

int main(void)
{
	unsigned long long fb0 = 0, fb1 = 0, fl0 = 0, fl1 = 0;
	long long free0, free1;
	struct outcome o;
	size_t per, n;
	int trouble, have_fb;

	pc_init(11);
	per = (size_t)(sysconf(_SC_PHYS_PAGES) / pc_nr_colors);
	n = 2 * per;
	tap_diag("about %zu pages per colour; touching %zu pages bound to colour 0", per, n);
	trouble = pc_dmesg_trouble();
	pc_settle();
	free0 = pc_memfree_pages();

	/* strict */
	pagecolor_read_counter("failures", &fl0);
	o = run(COLOR_MODE_BIND, n, "0");
	pagecolor_read_counter("failures", &fl1);
	show("BIND", &o, n);
	tap_ok(o.status != -1, "strict: the process does not hang at exhaustion");
	tap_ok(o.status != -1 && o.rep.touched > 0 && o.rep.bad == 0 && o.rep.absent == 0,
	       "strict: every page it got has the bound colour (checked after the last fault)");
	tap_ok(o.status != -1 && WIFEXITED(o.status) && WEXITSTATUS(o.status) == EXIT_SIGBUS &&
	       o.rep.touched < n, "strict: SIGBUS at exhaustion (%s)", describe(o.status));
	tap_ok(fl1 > fl0, "strict: failures counter grew (%llu -> %llu)", fl0, fl1);
	tap_ok(pc_dmesg_trouble() == trouble, "strict: no BUG/WARNING/Oops in dmesg");

	/* preferred */
	have_fb = pagecolor_read_counter("fallbacks", &fb0) == 0;
	o = run(COLOR_MODE_PREFERRED, n, "0");
	pagecolor_read_counter("fallbacks", &fb1);
	show("PREFERRED", &o, n);
	tap_diag("fallbacks %llu -> %llu", fb0, fb1);
	tap_ok(o.status != -1 && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0 &&
	       o.rep.touched == n, "preferred: all pages allocated (%s)", describe(o.status));
	tap_ok(o.rep.bad > 0 && o.rep.bad < n, "preferred: falls back to other colours only "
	       "partly (%zu of %zu pages outside colour 0)", o.rep.bad, n);
	tap_ok(have_fb && fb1 >= fb0 + o.rep.bad, "preferred: fallbacks counter grew by "
	       "at least the pages outside colour 0 (%llu >= %zu)", fb1 - fb0, o.rep.bad);
	tap_ok(o.rep.dup == 0, "no frame mapped twice");

	/*
	 * Right after exhaustion, other colours are still plentiful: a small
	 * strict allocation in colours 8-11 (~4000 free pages) must succeed.
	 */
	{
		static const char *sets[] = { "8-11", "100", "200-201", "37,77,177" };
		int k, good = 0, tried = 0;

		for (k = 0; k < 4; k++) {
			char label[64];

			if (pc_nr_colors < 256 && k)
				break;
			tried++;
			o = run(COLOR_MODE_BIND, 256, pc_nr_colors >= 256 ? sets[k] : "1");
			snprintf(label, sizeof(label), "BIND {%s} after exhaustion", sets[k]);
			show(label, &o, 256);
			if (o.status != -1 && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0 &&
			    o.rep.touched == 256 && o.rep.bad == 0)
				good++;
		}
		tap_ok(good == tried, "strict allocations of 256 pages in other colours right "
		       "after exhaustion succeed (%d of %d)", good, tried);
	}

	pc_settle();
	free1 = pc_memfree_pages();
	tap_diag("MemFree %lld -> %lld pages", free0, free1);
	tap_ok(free1 >= free0 - 1024 && pc_dmesg_trouble() == trouble,
	       "free memory back at baseline (within 1024 pages), dmesg clean");
	return tap_finish();
}
