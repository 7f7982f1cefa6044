// SPDX-License-Identifier: GPL-2.0
/*
 * Exhaustion: a process bound to one colour touches about twice the memory
 * that colour has in the whole machine.
 *
 * Strict (COLOR_MODE_BIND), as page_coloring.rst documents: after search
 * and reclaim the allocator invokes the OOM killer within the colours
 * (CONSTRAINT_PAGE_COLOR), like a bind mempolicy within its nodes.  The
 * process never holds pages of other colours and does not hang; here it
 * is the biggest task that may hold colour 0, so it is killed, while a
 * bigger bystander whose default policy binds it to other colours is
 * spared (an unconstrained OOM kill would take the bystander).  With every
 * process OOM-immune (oom_score_adj -1000) nothing can be killed: the
 * fault gets SIGBUS (like hugetlbfs with an empty pool), counted in
 * "failures", and the kernel does not panic.  No BUG/WARNING/Oops either
 * way.
 *
 * Preferred (COLOR_MODE_PREFERRED): the allocation succeeds, the pages
 * beyond the colour's capacity come from other colours, and the fallbacks
 * counter grows.
 *
 * The child reports through shared memory as it goes (a killed child
 * cannot report at the end): pages touched, and the colours of each
 * completed chunk; after SIGBUS or the last page it checks the whole range
 * again (pages moved after their fault, e.g. by compaction, are caught
 * too).  Afterwards free memory returns to its baseline.
 */
#include "pc_test.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>

#define TIMEOUT		180	/* seconds; TCG is slow */

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

#define CHUNK		256	/* pages checked together while touching */

struct report {
	size_t touched, bad, absent, dup;
	int distinct;
	double secs;		/* touching, the checks of the chunks included */
};

/*
 * Child: bind [p, p + n pages) to @list with @mode, touch it page by page,
 * keeping @rep (shared with the parent) up to date, then check the range
 * and exit PC_EXIT_SIGBUS (SIGBUS caught) or 0.
 */
static void child(int mode, size_t n, struct report *rep, const char *list)
{
	pagecolor_set_t s = pc_set(list);
	struct sigaction sa;
	struct pc_check r;
	volatile int got_sigbus = 0;
	double t0;
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
	t0 = pc_now();
	if (sigsetjmp(jb, 1) == 0) {
		for (touched = 0; touched < n; touched++) {
			p[touched * pc_page_size] = 1;
			rep->touched = touched + 1;
			if ((touched + 1) % CHUNK == 0 &&
			    pc_check_range(p + (touched + 1 - CHUNK) * pc_page_size,
					   CHUNK, &s, &r) == 0) {
				rep->bad += r.bad;
				rep->absent += r.absent;
			}
			rep->secs = pc_now() - t0;
		}
	} else {
		got_sigbus = 1;
	}
	rep->secs = pc_now() - t0;
	rep->touched = touched;
	if (pc_check_range(p, touched, &s, &r) == 0) {
		rep->bad = r.bad;
		rep->absent = r.absent;
		rep->distinct = r.distinct;
	}
	if (pagecolor_pfns(p, touched, pfns) == 0) {
		qsort(pfns, touched, sizeof(*pfns), cmp_u64);
		for (j = 1; j < touched; j++)
			if (pfns[j] && pfns[j] == pfns[j - 1])
				rep->dup++;
	}
	if (rep->bad) {
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
	_exit(got_sigbus ? PC_EXIT_SIGBUS : 0);
}

struct outcome {
	int status;		/* waitpid status, -1 if timed out */
	pid_t pid;
	struct report rep;
};

static struct outcome run(int mode, size_t n, const char *list)
{
	struct report *rep;
	struct outcome o;
	int i, st;
	pid_t pid;

	memset(&o, 0, sizeof(o));
	o.status = -1;
	rep = mmap(NULL, sizeof(*rep), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rep == MAP_FAILED)
		return o;
	memset(rep, 0, sizeof(*rep));
	pid = fork();
	if (pid == 0)
		child(mode, n, rep, list);
	o.pid = pid;
	for (i = 0; pid > 0 && i < TIMEOUT * 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			o.status = st;
			break;
		}
		usleep(100 * 1000);
	}
	if (pid > 0 && o.status == -1) {
		tap_diag("child did not finish in %d s: killing it", TIMEOUT);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	o.rep = *rep;
	munmap(rep, sizeof(*rep));
	return o;
}

/*
 * A process whose default policy binds it to @list, holding @n pages
 * until a byte arrives on *@stop; it exits 0 when its memory is intact.
 */
static pid_t bystander_start(const char *list, size_t n, int *stop)
{
	int go[2], ready[2];
	pid_t pid;
	char c;

	if (pipe(go) || pipe(ready))
		return -1;
	pid = fork();
	if (pid == 0) {
		pagecolor_set_t s = pc_set(list);
		size_t j;
		long *p;

		close(go[1]);
		close(ready[0]);
		if (pagecolor_set_policy(COLOR_MODE_BIND, &s))
			_exit(30);
		p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(31);
		for (j = 0; j < n; j++)
			p[j * pc_page_size / sizeof(long)] = (long)j;
		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(32);
		for (j = 0; j < n; j++)
			if (p[j * pc_page_size / sizeof(long)] != (long)j)
				_exit(33);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	*stop = go[1];
	if (pid < 0 || read(ready[0], &c, 1) != 1) {
		close(ready[0]);
		return -1;
	}
	close(ready[0]);
	return pid;
}

/* Set every process's oom_score_adj to @adj (if @old) or back to @old[]. */
#define MAX_PROCS	256
static void oom_adjust_all(pid_t *pids, int *old, int *count, int adj)
{
	char path[64], buf[16];
	struct dirent *d;
	DIR *dir;
	int i;

	if (*count) {
		for (i = 0; i < *count; i++) {
			snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", pids[i]);
			snprintf(buf, sizeof(buf), "%d", old[i]);
			pc_write_file(path, buf);
		}
		*count = 0;
		return;
	}
	dir = opendir("/proc");
	while (dir && (d = readdir(dir)) && *count < MAX_PROCS) {
		pid_t pid = (pid_t)atoi(d->d_name);
		FILE *f;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", pid);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%d", &old[*count]) == 1) {
			snprintf(buf, sizeof(buf), "%d", adj);
			if (pc_write_file(path, buf) == 0)
				pids[(*count)++] = pid;
		}
		fclose(f);
	}
	if (dir)
		closedir(dir);
}

static const char *describe(int st)
{
	static char buf[64];

	if (st == -1)
		return "hung";
	if (WIFEXITED(st) && WEXITSTATUS(st) == PC_EXIT_SIGBUS)
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
	tap_diag("%s: %s after touching %zu of %zu pages in %.2f s (%.1f us per page): "
		 "%zu outside the set, %zu absent, %d distinct colours, %zu frames mapped "
		 "twice", what, describe(o->status), o->rep.touched, n, o->rep.secs,
		 o->rep.touched ? o->rep.secs * 1e6 / o->rep.touched : 0.0, o->rep.bad,
		 o->rep.absent, o->rep.distinct, o->rep.dup);
}

int main(void)
{
	unsigned long long fb0 = 0, fb1 = 0, fl0 = 0, fl1 = 0;
	long long free0, free1;
	struct outcome o;
	size_t per, n;
	int trouble, have_fb;

	pc_init(16);
	per = pc_color_share();
	n = 2 * per;
	tap_diag("about %zu pages per colour; touching %zu pages bound to colour 0", per, n);
	trouble = pc_dmesg_trouble();
	pc_settle();
	free0 = pc_memfree_pages();

	/*
	 * Strict, OOM within the colours: a bystander bound by its default
	 * policy to the upper half of the colours holds twice what colour 0
	 * has, so it is the biggest task; the OOM killer must take the child.
	 */
	{
		char half[32], last[512], want[64];
		int stop = -1, bst = -1, kills0, kills1, cons0, cons1;
		pid_t by;

		snprintf(half, sizeof(half), "%d-%d", pc_nr_colors / 2, pc_nr_colors - 1);
		kills0 = pc_dmesg_find("Out of memory: Killed process", NULL, 0);
		cons0 = pc_dmesg_find("constraint=CONSTRAINT_PAGE_COLOR", NULL, 0);
		by = bystander_start(half, n, &stop);
		tap_ok(by > 0, "bystander bound to colours %s holds %zu pages", half, n);
		o = run(COLOR_MODE_BIND, n, "0");
		show("BIND", &o, n);
		kills1 = pc_dmesg_find("Out of memory: Killed process", last, sizeof(last));
		cons1 = pc_dmesg_find("constraint=CONSTRAINT_PAGE_COLOR", NULL, 0);
		tap_diag("dmesg: %s", last);
		if (stop >= 0) {
			if (write(stop, "s", 1) != 1)
				tap_diag("cannot wake the bystander");
			close(stop);
		}
		if (by > 0)
			waitpid(by, &bst, 0);
		snprintf(want, sizeof(want), "Killed process %d ", (int)o.pid);
		tap_ok(o.status != -1, "strict: the process does not hang at exhaustion");
		tap_ok(o.status != -1 && o.rep.touched > 0 && o.rep.bad == 0 &&
		       o.rep.absent == 0, "strict: every page it got has the bound colour");
		tap_ok(o.status != -1 && WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGKILL &&
		       o.rep.touched < n && kills1 > kills0 && strstr(last, want),
		       "strict: the OOM killer took it at exhaustion (%s)", describe(o.status));
		tap_ok(cons1 > cons0, "strict: the OOM kill was constrained to the colours "
		       "(CONSTRAINT_PAGE_COLOR lines %d -> %d)", cons0, cons1);
		tap_ok(by > 0 && WIFEXITED(bst) && WEXITSTATUS(bst) == 0,
		       "strict: the bigger bystander bound to other colours was spared, "
		       "its memory intact (%s)", describe(bst));
		tap_ok(pc_dmesg_trouble() == trouble, "strict: no BUG/WARNING/Oops in dmesg");
	}

	/* Strict with nothing killable: SIGBUS, not a panic or a hang. */
	{
		static pid_t pids[MAX_PROCS];
		static int old[MAX_PROCS];
		int count = 0, none0, none1;

		none0 = pc_dmesg_find("no killable processes", NULL, 0);
		oom_adjust_all(pids, old, &count, -1000);
		tap_diag("oom_score_adj -1000 for %d processes", count);
		pagecolor_read_counter("failures", &fl0);
		o = run(COLOR_MODE_BIND, n, "0");
		pagecolor_read_counter("failures", &fl1);
		oom_adjust_all(pids, old, &count, 0);
		none1 = pc_dmesg_find("no killable processes", NULL, 0);
		show("BIND, all OOM-immune", &o, n);
		tap_ok(o.status != -1 && WIFEXITED(o.status) && WEXITSTATUS(o.status) == PC_EXIT_SIGBUS &&
		       o.rep.touched < n && o.rep.bad == 0 && o.rep.absent == 0,
		       "strict, nothing killable: SIGBUS at exhaustion (%s)", describe(o.status));
		tap_ok(fl1 > fl0 && none1 > none0, "strict, nothing killable: failures "
		       "counter grew (%llu -> %llu), the OOM killer found no victim",
		       fl0, fl1);
		tap_ok(pc_dmesg_trouble() == trouble, "strict, nothing killable: no "
		       "BUG/WARNING/Oops, no panic");
	}

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
	 * Small means 256 pages, or half the set's share when that is less
	 * (a single colour's share is about 250 pages at 1,024 colours in
	 * 1 GiB).  Each starts from the same state (issue 29 item 10): the
	 * colour lists drained and empty, not depending on whether the
	 * release a second after the last policy has run yet.
	 */
	{
		static const char *sets[] = { "8-11", "100", "200-201", "37,77,177" };
		int k, good = 0, tried = 0;
		long long parked, parked_max = 0;
		size_t want, least = 256;

		pagecolor_read_counter("failures", &fl0);
		for (k = 0; k < 4; k++) {
			const char *list = pc_nr_colors >= 256 ? sets[k] : "1";
			pagecolor_set_t s = pc_set(list);
			char label[64];

			if (pc_nr_colors < 256 && k)
				break;
			tried++;
			want = pagecolor_set_count(&s) * per / 2;
			if (want > 256)
				want = 256;
			if (want < least)
				least = want;
			parked = pc_wait_parked(1, 10000);
			if (parked != 0 && (parked < 0 || parked > parked_max))
				parked_max = parked < 0 ? -1 : parked;
			o = run(COLOR_MODE_BIND, want, list);
			snprintf(label, sizeof(label), "BIND {%s} after exhaustion", list);
			show(label, &o, want);
			if (o.status != -1 && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0 &&
			    o.rep.touched == want && o.rep.bad == 0)
				good++;
		}
		pagecolor_read_counter("failures", &fl1);
		tap_ok(good == tried && parked_max == 0 && fl1 == fl0,
		       "strict allocations of %zu-256 pages (256, or half the set's share) in "
		       "other colours right after exhaustion, each after a drain to 0 parked "
		       "pages, succeed (%d of %d; parked before them %lld; failures %llu -> %llu)",
		       least, good, tried, parked_max, fl0, fl1);
	}

	pc_settle();
	free1 = pc_memfree_pages();
	tap_diag("MemFree %lld -> %lld pages", free0, free1);
	tap_ok(free1 >= free0 - 1024 && pc_dmesg_trouble() == trouble,
	       "free memory back at baseline (within 1024 pages), dmesg clean");
	return tap_finish();
}
