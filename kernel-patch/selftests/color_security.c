// SPDX-License-Identifier: GPL-2.0
/*
 * The colour interfaces as an unprivileged attacker (uid/gid 65534, no
 * capabilities) sees them, with mempolicy's rules as the model:
 *
 * - COLOR_MBIND_MIGRATE moves only pages mapped by the caller alone (as
 *   MPOL_MF_MOVE): a page another process maps too stays where it is and
 *   the call reports EIO; COLOR_MBIND_MIGRATE_ALL (as MPOL_MF_MOVE_ALL)
 *   moves shared pages too and needs CAP_SYS_NICE, else EPERM.
 * - /proc/PID/color_maps prints per-colour page counts (the cache set
 *   index bits of physical addresses, which pagemap hides from such a
 *   reader) only to a reader with CAP_SYS_ADMIN.
 *
 * Runs as root; the attacker is a forked child that drops to uid 65534.
 * Setting a colour policy is itself a privilege (vm.page_color_restrict,
 * color_privilege checks it); these checks are about what a process that
 * may colour can do to others, so the sysctl is 0 while they run and is
 * put back afterwards.
 */
#include "pc_test.h"

#include <grp.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define NPAGES		16
#define NOBODY		65534
#define SYSCTL		"/proc/sys/vm/page_color_restrict"

static pagecolor_set_t setA, setB;

/* Write @val to the sysctl; its old value in @old (-1 when absent). */
static void restrict_colours(const char *val, char *old, size_t len)
{
	ssize_t n = -1;
	int fd;

	if (old) {
		fd = open(SYSCTL, O_RDONLY);
		n = fd >= 0 ? read(fd, old, len - 1) : -1;
		if (fd >= 0)
			close(fd);
		old[n > 0 ? n : 0] = 0;
		if (n <= 0) {
			tap_diag("no %s: colour policies are unprivileged here", SYSCTL);
			return;
		}
	}
	fd = open(SYSCTL, O_WRONLY);
	if (fd < 0 || write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		tap_diag("writing %s to %s: %s", val, SYSCTL, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static void drop_privileges(void)
{
	/*
	 * Changing uid makes a process non-dumpable, which puts its /proc
	 * files out of its own reach; an ordinary user's process is dumpable.
	 */
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY) ||
	    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)) {
		printf("# dropping to uid %d: %s\n", NOBODY, strerror(errno));
		_exit(100);
	}
}

/* Exit status of a child that ran fn as the attacker; -1 on wait failure. */
static int as_attacker(int (*fn)(void *), void *arg)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		drop_privileges();
		_exit(fn(arg));
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* How many of the n pages at addr of process pid have a colour in set. */
static int pages_in(pid_t pid, const void *addr, int n, const pagecolor_set_t *set)
{
	uint64_t pfns[NPAGES];
	int i, in = 0;

	if (pagecolor_pid_pfns(pid, (uintptr_t)addr, n, pfns) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (pfns[i] && pagecolor_set_test(set, pagecolor_pfn_color(pfns[i], pc_nr_colors)))
			in++;
	return in;
}

struct shared_args {
	int fd;
	unsigned int flags;
};

/* The attacker maps the shared file read-only and asks to move it to B. */
static int migrate_shared(void *arg)
{
	struct shared_args *a = arg;
	char *p = mmap(NULL, NPAGES * pc_page_size, PROT_READ, MAP_SHARED, a->fd, 0);
	volatile char sum = 0;
	int i;

	if (p == MAP_FAILED)
		return 101;
	for (i = 0; i < NPAGES; i++)
		sum += p[i * pc_page_size];
	if (pagecolor_mbind(p, NPAGES * pc_page_size, COLOR_MODE_BIND, &setB, a->flags) == 0)
		return 0;
	return errno == EIO ? 1 : errno == EPERM ? 2 : 102;
}

/*
 * Moving its own private pages still works: the child reports through a
 * pipe and waits, so that the parent reads the frames from its pagemap.
 */
/*
 * One pipe each way: on two CPUs a child reading the pipe it has just
 * written to can take its own bytes before the parent does.
 */
static int move_own(int *up, int *down, pid_t *child, char **addr)
{
	char *p;
	char c;
	int i;

	*child = fork();
	if (*child < 0)
		return -1;
	if (*child) {
		if (read(up[0], addr, sizeof(*addr)) != sizeof(*addr))
			return -1;
		return 0;
	}
	drop_privileges();
	p = mmap(NULL, NPAGES * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(101);
	for (i = 0; i < NPAGES; i++)
		p[i * pc_page_size] = 1;
	if (pagecolor_mbind(p, NPAGES * pc_page_size, COLOR_MODE_BIND, &setB,
			    COLOR_MBIND_MIGRATE) != 0)
		p = NULL;
	if (write(up[1], &p, sizeof(p)) != sizeof(p))
		_exit(102);
	if (read(down[0], &c, 1) < 0)	/* until the parent has looked */
		_exit(103);
	_exit(0);
}

/* Does /proc/self/color_maps (as this process reads it) give counts for addr? */
static int color_maps_counts(const void *addr, int *have_line)
{
	char line[4096], start[32];
	FILE *f = fopen("/proc/self/color_maps", "r");
	int counts = 0;

	*have_line = 0;
	if (!f) {
		printf("# /proc/self/color_maps: %s\n", strerror(errno));
		return -1;
	}
	snprintf(start, sizeof(start), "%08lx-", (unsigned long)addr);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, start, strlen(start))) {
			*have_line = 1;
			counts = strstr(line, " N") != NULL;
		}
	fclose(f);
	if (!*have_line)
		printf("# /proc/self/color_maps has no line starting %s\n", start);
	return counts;
}

static int attacker_reads_color_maps(void *arg)
{
	char *p = mmap(NULL, NPAGES * pc_page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t pfn = 1;
	int line, counts, i;

	(void)arg;
	if (p == MAP_FAILED)
		return 101;
	for (i = 0; i < NPAGES; i++)
		p[i * pc_page_size] = 1;
	if (pagecolor_mbind(p, NPAGES * pc_page_size, COLOR_MODE_BIND, &setA, 0))
		return 102;
	counts = color_maps_counts(p, &line);
	/* what pagemap gives this reader: present pages, no frame numbers */
	if (pagecolor_pfn(p, &pfn) != 0) {
		if (errno != EPERM)
			printf("# attacker's pagemap: %s\n", strerror(errno));
		pfn = errno == EPERM ? 0 : 1;
	}
	if (counts < 0 || !line)
		return 103;
	return (counts ? 1 : 0) | (pfn ? 2 : 0);
}

/* Put the sysctl back as it was (the next test program reads it), then report. */
static int finish(const char *restrict_old)
{
	if (restrict_old[0])
		restrict_colours(restrict_old, NULL, 0);
	return tap_finish();
}

int main(void)
{
	struct shared_args args;
	int up[2], down[2], st, line, in;
	pid_t child;
	char *p, *own = NULL;
	char buf[64], restrict_old[16];

	pc_init(10);
	if (geteuid() != 0) {
		tap_diag("must run as root (the attacker is a child that drops to uid %d)", NOBODY);
		return tap_finish();
	}
	restrict_colours("0", restrict_old, sizeof(restrict_old));
	snprintf(buf, sizeof(buf), "0-%d", pc_nr_colors / 4 - 1);
	setA = pc_set(buf);
	snprintf(buf, sizeof(buf), "%d-%d", pc_nr_colors / 2, pc_nr_colors / 2 + pc_nr_colors / 4 - 1);
	setB = pc_set(buf);

	/* root's shared memory, bound to A */
	args.fd = memfd_create("color_security", 0);
	if (args.fd < 0 || fchmod(args.fd, 0644) || ftruncate(args.fd, NPAGES * pc_page_size)) {
		tap_diag("memfd: %s", strerror(errno));
		return finish(restrict_old);
	}
	p = mmap(NULL, NPAGES * pc_page_size, PROT_READ | PROT_WRITE, MAP_SHARED, args.fd, 0);
	if (p == MAP_FAILED ||
	    pagecolor_mbind(p, NPAGES * pc_page_size, COLOR_MODE_BIND, &setA, 0)) {
		tap_diag("root's mapping: %s", strerror(errno));
		return finish(restrict_old);
	}
	pc_touch(p, NPAGES);
	tap_ok(pc_range_ok(p, NPAGES, &setA, "root's shared pages"),
	       "root's shared pages are on colours A");

	args.flags = COLOR_MBIND_MIGRATE;
	st = as_attacker(migrate_shared, &args);
	tap_ok(st == 1, "attacker: COLOR_MBIND_MIGRATE of pages root maps too -> EIO (status %d)", st);
	in = pages_in(getpid(), p, NPAGES, &setA);
	tap_ok(in == NPAGES, "root's pages stayed on colours A (%d of %d)", in, NPAGES);

	args.flags = COLOR_MBIND_MIGRATE_ALL;
	st = as_attacker(migrate_shared, &args);
	tap_ok(st == 2, "attacker: COLOR_MBIND_MIGRATE_ALL without CAP_SYS_NICE -> EPERM (status %d)", st);

	/* an unprivileged process still moves pages it alone maps */
	if (pipe(up) || pipe(down) || move_own(up, down, &child, &own) != 0) {
		tap_diag("pipe/fork: %s", strerror(errno));
		return finish(restrict_old);
	}
	in = own ? pages_in(child, own, NPAGES, &setB) : -1;
	if (write(down[1], "x", 1) != 1 || waitpid(child, &st, 0) != child)
		st = -1;
	tap_ok(own && in == NPAGES && st == 0,
	       "attacker: COLOR_MBIND_MIGRATE moves its own private pages (%d of %d on B)", in, NPAGES);

	/* with CAP_SYS_NICE, MIGRATE_ALL moves shared pages (here: mapped by a child too) */
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	tap_ok(pagecolor_mbind(p, NPAGES * pc_page_size, COLOR_MODE_BIND, &setB,
			       COLOR_MBIND_MIGRATE_ALL) == 0 &&
	       pages_in(getpid(), p, NPAGES, &setB) == NPAGES,
	       "root: COLOR_MBIND_MIGRATE_ALL moves pages a child maps too");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);

	/*
	 * The file mapped twice, side by side, in one range: each page is met
	 * twice by the walk and moved once; that is not a failure (EIO).
	 */
	{
		size_t len = NPAGES * pc_page_size;
		char *q = mmap(NULL, 2 * len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int ok = q != MAP_FAILED &&
			 mmap(q, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			      args.fd, 0) == q &&
			 mmap(q + len, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			      args.fd, 0) == q + len;
		int rc = -1, err = 0;

		if (ok) {
			pc_touch(q, 2 * NPAGES);
			rc = pagecolor_mbind(q, 2 * len, COLOR_MODE_BIND, &setA,
					     COLOR_MBIND_MIGRATE_ALL);
			err = rc ? errno : 0;
		}
		tap_ok(ok && rc == 0 && pages_in(getpid(), q, NPAGES, &setA) == NPAGES,
		       "root: COLOR_MBIND_MIGRATE_ALL over a file mapped twice in the range "
		       "moves its pages, no EIO (rc %d, %s)", rc, strerror(err));
		if (q != MAP_FAILED)
			munmap(q, 2 * len);
	}

	/* color_maps: counts are physical address bits */
	st = as_attacker(attacker_reads_color_maps, NULL);
	tap_ok(st >= 0 && st < 100 && !(st & 2),
	       "attacker: pagemap hides frame numbers from it (status %d)", st);
	tap_ok(st >= 0 && st < 100 && !(st & 1),
	       "attacker: /proc/self/color_maps lists its VMA without per-colour counts (status %d)", st);
	tap_ok(color_maps_counts(p, &line) == 1 && line,
	       "root: /proc/self/color_maps gives per-colour counts");

	munmap(p, NPAGES * pc_page_size);
	close(args.fd);
	return finish(restrict_old);
}
