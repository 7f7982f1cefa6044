// SPDX-License-Identifier: GPL-2.0
/*
 * Measurements, not assertions (issue 51 item 3): how long the colour
 * allocator keeps interrupts off, and how long one fault takes, when a
 * task bound to one colour has used that colour up.  Needs the irqs-off
 * latency tracer (the "trace" kernel, kernel-patch/configs/trace.config);
 * on another kernel it skips.
 *
 * Four phases, each a child faulting pages one by one and timing each
 * fault on the last CPU, while the tracer keeps the longest section with
 * interrupts off on that CPU since the phase began (tracing_cpumask;
 * tracing_max_latency, reset before it):
 *   uncoloured  a child without a colour policy faults as many pages as
 *               the bound one will try: the base line, the kernel's own
 *               sections;
 *   exhaust     a child bound to colour 0 (COLOR_MODE_BIND), OOM-immune,
 *               faults twice its colour's share: once the colour is used
 *               up, each fault runs the whole slow path (the parked lists,
 *               a block refill, the free-list and frame walk under the
 *               zone lock, reclaim aimed at the colour, single pages, an
 *               OOM kill that finds no victim) and the last gets SIGBUS;
 *   memcgs      the same beside 2,000 empty memory cgroups, whose
 *               protection each aimed reclaim brings up to date;
 *   exhaust2    the first again, the groups removed: what the order of
 *               the phases changes, apart from the groups.
 * The console log level is lowered meanwhile: a message printed to the
 * serial console keeps interrupts off for as long as it takes to print.
 *
 * Prints "# bench PHASE_WHAT VALUE" lines (times in microseconds) and
 * "# where PHASE: ..." with the task, start, end and stack of the longest
 * section.  The TAP checks say only that each phase ran as described.
 */
#include "pc_test.h"

#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define TRACING		"/sys/kernel/tracing"
#define GROUPS_DIR	PC_CGROOT "/latency"
#define NR_GROUPS	2000
#define PLAN		6

/* What a child reports, in memory shared with the parent. */
struct faults {
	size_t n;		/* faults timed */
	int sigbus;		/* the fault after them got SIGBUS */
	double last_us;		/* that fault's time */
	float us[];		/* each fault's time */
};

/* volatile: read after siglongjmp() from the SIGBUS handler */
static sigjmp_buf jb;
static volatile double fault_start;
static int child_cpu;		/* the CPU the children run on, the one traced */

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/*
 * Child: on child_cpu, map @n pages, bound to colour 0 (OOM-immune) with
 * @bound, and fault them one by one, each one timed into @f.  Exits 0, or
 * 20-23 when the mapping, the policy, oom_score_adj or the CPU cannot be
 * set.
 */
static void child(struct faults *f, size_t n, int bound)
{
	pagecolor_set_t zero = pc_set("0");
	struct sigaction sa;
	volatile size_t i;
	cpu_set_t cpus;
	char *p;

	CPU_ZERO(&cpus);
	CPU_SET(child_cpu, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus))
		_exit(23);
	p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		_exit(20);
	if (bound ? pagecolor_mbind(p, n * pc_page_size, COLOR_MODE_BIND, &zero, 0) :
		    madvise(p, n * pc_page_size, MADV_NOHUGEPAGE))
		_exit(21);
	if (bound && pc_write_file("/proc/self/oom_score_adj", "-1000"))
		_exit(22);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigaction(SIGBUS, &sa, NULL);
	if (sigsetjmp(jb, 1)) {
		f->last_us = (pc_now() - fault_start) * 1e6;
		f->sigbus = 1;
		_exit(0);
	}
	for (i = 0; i < n; i++) {
		fault_start = pc_now();
		p[i * pc_page_size] = 1;
		f->us[i] = (float)((pc_now() - fault_start) * 1e6);
		f->n = i + 1;
	}
	_exit(0);
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/* The @q quantile of @v[0..n), sorted already. */
static double quantile(const float *v, size_t n, double q)
{
	return n ? v[(size_t)(q * (n - 1) + 0.5)] : 0;
}

/* The text after @key in @line, or NULL. */
static const char *after(const char *line, const char *key)
{
	const char *s = strstr(line, key);

	return s ? s + strlen(key) : NULL;
}

/*
 * "# where PHASE: task ...; started at ...; ended at ...; stack a < b < ..."
 * from the tracer's record of the longest section.
 */
static void show_where(const char *phase)
{
	char line[512], task[128] = "?", start[128] = "?", end[128] = "?";
	char stack[512] = "";
	int frames = 0;
	FILE *f = fopen(TRACING "/trace", "r");

	while (f && fgets(line, sizeof(line), f)) {
		const char *v;

		line[strcspn(line, "\n")] = 0;
		v = after(line, "| task: ");
		if (v) {
			snprintf(task, sizeof(task), "%s", v);
			continue;
		}
		v = after(line, "=> started at: ");
		if (v) {
			snprintf(start, sizeof(start), "%s", v);
			continue;
		}
		v = after(line, "=> ended at:");
		if (v) {
			snprintf(end, sizeof(end), "%s", v + strspn(v, " "));
			continue;
		}
		if (!strncmp(line, " => ", 4) && frames < 8) {
			size_t len = strlen(stack);

			snprintf(stack + len, sizeof(stack) - len, "%s%s",
				 frames++ ? " < " : "", line + 4);
		}
	}
	if (f)
		fclose(f);
	tap_diag("where %s: task %s; started at %s; ended at %s; stack %s",
		 phase, task, start, end, frames ? stack : "(none)");
}

/*
 * One phase: reset the tracer's maximum, let a child fault @n pages
 * (bound to colour 0 with @bound), report what it measured.  Returns the
 * child's wait status (-1 when it could not run); *@f holds its report.
 */
static int phase(const char *name, struct faults *f, size_t n, int bound)
{
	char buf[64] = "";
	int st = -1;
	pid_t pid;

	memset(f, 0, sizeof(*f));
	if (pc_write_file(TRACING "/tracing_max_latency", "0"))
		return -1;
	pid = fork();
	if (pid == 0)
		child(f, n, bound);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	pc_read_line(TRACING "/tracing_max_latency", buf, sizeof(buf));
	tap_diag("bench %s_irqsoff_us %s", name, buf[0] ? buf : "-1");
	show_where(name);
	tap_diag("bench %s_pages %zu", name, f->n);
	if (f->sigbus)
		tap_diag("bench %s_sigbus_fault_us %.1f", name, f->last_us);
	qsort(f->us, f->n, sizeof(f->us[0]), cmp_float);
	tap_diag("bench %s_fault_p50_us %.1f", name, quantile(f->us, f->n, 0.5));
	tap_diag("bench %s_fault_p99_us %.1f", name, quantile(f->us, f->n, 0.99));
	tap_diag("bench %s_fault_max_us %.1f", name, quantile(f->us, f->n, 1.0));
	return st;
}

/* Make (@make) or remove NR_GROUPS empty memory cgroups: how many. */
static int memcg_groups(int make)
{
	char dir[PATH_MAX];
	int i, done = 0;

	if (make && (pc_cgroup_make(GROUPS_DIR) ||
		     pc_write_file(GROUPS_DIR "/cgroup.subtree_control", "+memory")))
		return 0;
	for (i = 0; i < NR_GROUPS; i++) {
		snprintf(dir, sizeof(dir), GROUPS_DIR "/g%d", i);
		done += make ? mkdir(dir, 0755) == 0 : rmdir(dir) == 0;
	}
	if (!make)
		rmdir(GROUPS_DIR);
	return done;
}

static int exited_with_sigbus(int st, const struct faults *f, size_t n)
{
	return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && f->sigbus && f->n < n;
}

int main(void)
{
	char tracers[512] = "", printk[64] = "", mask[32];
	size_t n, size;
	struct faults *f;
	int trouble, st, groups;

	pc_init(PLAN);
	mkdir(TRACING, 0755);
	if (mount("nodev", TRACING, "tracefs", 0, NULL) && errno != EBUSY)
		tap_diag("mount tracefs: %s", strerror(errno));
	pc_read_line(TRACING "/available_tracers", tracers, sizeof(tracers));
	if (!strstr(tracers, "irqsoff")) {
		for (int i = 0; i < PLAN; i++)
			tap_skip("no irqsoff tracer (kernel-tree.sh build trace has one)");
		tap_finish();
		return KSFT_SKIP;
	}
	child_cpu = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
	snprintf(mask, sizeof(mask), "%lx", 1UL << child_cpu);
	tap_ok(child_cpu >= 0 && child_cpu < 64 &&
	       pc_write_file(TRACING "/tracing_cpumask", mask) == 0 &&
	       pc_write_file(TRACING "/current_tracer", "irqsoff") == 0 &&
	       pc_write_file(TRACING "/tracing_on", "1") == 0,
	       "the irqs-off latency tracer is on, for CPU %d", child_cpu);

	n = 2 * pc_color_share();
	size = sizeof(*f) + n * sizeof(f->us[0]);
	f = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (f == MAP_FAILED) {
		tap_diag("mmap: %s", strerror(errno));
		return tap_finish();
	}
	memset(f, 0, size);
	tap_diag("%d colours; %zu pages a phase, twice a colour's share", pc_nr_colors, n);
	trouble = pc_dmesg_trouble();
	pc_read_line("/proc/sys/kernel/printk", printk, sizeof(printk));
	pc_write_file("/proc/sys/kernel/printk", "1");

	pc_settle();
	st = phase("uncoloured", f, n, 0);
	tap_ok(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && f->n == n,
	       "uncoloured: the child faulted all %zu pages (%zu)", n, f->n);

	pc_wait_parked(1, 5000);
	pc_settle();
	st = phase("exhaust", f, n, 1);
	tap_ok(exited_with_sigbus(st, f, n),
	       "bound to colour 0, OOM-immune: SIGBUS after %zu of %zu pages", f->n, n);

	groups = memcg_groups(1);
	tap_diag("%d memory cgroups made under %s", groups, GROUPS_DIR);
	pc_wait_parked(1, 5000);
	pc_settle();
	st = phase("memcgs", f, n, 1);
	tap_ok(groups == NR_GROUPS && exited_with_sigbus(st, f, n),
	       "beside %d memory cgroups: SIGBUS after %zu of %zu pages", groups, f->n, n);
	tap_diag("%d memory cgroups removed", memcg_groups(0));

	pc_wait_parked(1, 5000);
	pc_settle();
	st = phase("exhaust2", f, n, 1);
	tap_ok(exited_with_sigbus(st, f, n),
	       "again without the groups: SIGBUS after %zu of %zu pages", f->n, n);

	pc_write_file(TRACING "/current_tracer", "nop");
	if (printk[0])
		pc_write_file("/proc/sys/kernel/printk", printk);
	tap_ok(pc_dmesg_trouble() == trouble, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
