// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A resctrl for the simulator: a directory laid out like /sys/fs/resctrl
 * (Documentation/arch/x86/resctrl.rst) whose groups' schemata reach the
 * llcsim plugin's per-vCPU way masks, so that a program written for
 * resctrl (mccdb's resctrl back end) runs unchanged in the guest.
 *
 * The tree: info/L3/cbm_mask, info/L3/min_cbm_bits, info/L3/num_closids,
 * schemata ("L3:0=ffff;1=ffff", one entry per LLC domain) and tasks at the
 * root; a group is a directory made with mkdir, with its own schemata, and
 * the agent gives it a tasks file.  Each tasks file is a FIFO the agent
 * reads: a write of a pid (the kernel's resctrl moves that task) reaches it
 * whole and in order, where two writers of a plain file could overwrite
 * each other.  A pid written to a group's tasks moves to that group; a pid
 * that reached several tasks files in one wake-up goes to the root, the
 * side that confines nothing.
 *
 * CAT switches a CPU's class of service when the kernel switches tasks;
 * the agent approximates that per vCPU: on every move (and every second)
 * it gives each vCPU the union of the masks (for the vCPU's LLC domain) of
 * the groups whose tasks are running there (state R, last CPU that vCPU),
 * and leaves a vCPU with none of them as it is.  It pins itself to a vCPU
 * to set its mask (the plugin's WAYS command acts on the vCPU that
 * executes it) and records what it applied in info/llcsim_applied ("CPU
 * MASK" lines), which the workers of run.sh domains wait for.
 *
 * Exact for tasks pinned one per vCPU, as the experiments run them; a vCPU
 * shared by tasks of different groups gets the union of their masks.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "llcsim_guest.h"
#include "resctrl_agent.h"

/*
 * It wakes on every move; otherwise once a second, for new groups and for
 * tasks that exited.  Its own work runs on the vCPUs it watches and counts
 * in their modeled cycles, and a guest second is long under TCG: waking
 * every 10 ms cost the queries beside it several per cent.
 */
#define POLL_US		1000000
#define MAX_CPUS	64
#define MAX_DOMAINS	16
#define MAX_GROUPS	16
#define MAX_TASKS	256

struct group {
	char name[256];			/* "" = the root group */
	uint64_t mask[MAX_DOMAINS];	/* per LLC domain id, from schemata */
	int fd, keep;			/* its tasks FIFO: read end, and a write end
					 * that keeps it from reading as closed */
};

struct task {
	int pid;
	int group;
};

static const char *root;
static uint64_t full_mask;
static int ncpus, domain_of[MAX_CPUS];
static struct group groups[MAX_GROUPS];
static int ngroups;
static struct task tasks[MAX_TASKS];
static int ntasks;
static uint64_t applied[MAX_CPUS];

static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static int read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return 0;
}

/* The LLC domain of each CPU: its index3 cache id, as resctrl's domains. */
static void read_topology(void)
{
	char path[128], buf[32];
	int c;

	ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	if (ncpus > MAX_CPUS)
		ncpus = MAX_CPUS;
	for (c = 0; c < ncpus; c++) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index3/id", c);
		domain_of[c] = read_text(path, buf, sizeof(buf)) ? 0 : atoi(buf);
		if (domain_of[c] < 0 || domain_of[c] >= MAX_DOMAINS)
			domain_of[c] = 0;
	}
}

static int make_tree(int ways)
{
	char path[4096], text[512];
	int used, d, c, seen[MAX_DOMAINS] = { 0 };

	full_mask = ways >= 64 ? ~0ULL : (1ULL << ways) - 1;
	snprintf(path, sizeof(path), "%s/info/L3", root);
	if (mkdir(root, 0755) && errno != EEXIST)
		return -1;
	snprintf(text, sizeof(text), "%s/info", root);
	if ((mkdir(text, 0755) && errno != EEXIST) || (mkdir(path, 0755) && errno != EEXIST))
		return -1;
	snprintf(path, sizeof(path), "%s/info/L3/cbm_mask", root);
	snprintf(text, sizeof(text), "%llx\n", (unsigned long long)full_mask);
	if (write_text(path, text))
		return -1;
	snprintf(path, sizeof(path), "%s/info/L3/min_cbm_bits", root);
	if (write_text(path, "1\n"))
		return -1;
	snprintf(path, sizeof(path), "%s/info/L3/num_closids", root);
	if (write_text(path, "16\n"))
		return -1;
	used = snprintf(text, sizeof(text), "L3:");
	for (c = 0; c < ncpus; c++) {
		d = domain_of[c];
		if (seen[d]++)
			continue;
		used += snprintf(text + used, sizeof(text) - (size_t)used, "%s%d=%llx",
				 used > 3 ? ";" : "", d, (unsigned long long)full_mask);
	}
	snprintf(text + used, sizeof(text) - (size_t)used, "\n");
	snprintf(path, sizeof(path), "%s/schemata", root);
	return write_text(path, text);
}

/* "L3:0=ff;1=f0" -> mask per domain id; domains not named keep all ways. */
static void parse_schemata(const char *text, uint64_t *mask)
{
	const char *p = strstr(text, "L3:");
	int d;

	for (d = 0; d < MAX_DOMAINS; d++)
		mask[d] = full_mask;
	for (p = p ? p + 3 : NULL; p && *p && *p != '\n';) {
		char *end, *mend;
		long id = strtol(p, &end, 10);
		uint64_t m;

		if (end == p || *end != '=')
			return;
		m = strtoull(end + 1, &mend, 16);
		if (mend == end + 1)
			return;
		if (id >= 0 && id < MAX_DOMAINS && (m & full_mask))
			mask[id] = m & full_mask;
		p = *mend == ';' ? mend + 1 : NULL;
	}
}

static struct task *task_of(int pid)
{
	int i;

	for (i = 0; i < ntasks; i++)
		if (tasks[i].pid == pid)
			return &tasks[i];
	if (ntasks == MAX_TASKS)
		return NULL;
	memset(&tasks[ntasks], 0, sizeof(tasks[0]));
	tasks[ntasks].pid = pid;
	return &tasks[ntasks++];
}

/* Group g's FILE ("tasks", "schemata") under the root. */
static void group_path(int g, const char *file, char *path, size_t len)
{
	snprintf(path, len, "%s%s%s/%s", root, groups[g].name[0] ? "/" : "", groups[g].name, file);
}

/* The pids in text, written to group g's tasks, as moves; seen (NULL: none
 * yet) marks the tasks moved in this wake-up: several groups in one, and
 * their order is lost. */
static void take_moves(const char *text, int g, int *seen)
{
	const char *p;
	char *end;

	for (p = text; *p; p = end) {
		long pid = strtol(p, &end, 10);
		struct task *t;

		if (end == p) {
			end = (char *)p + 1;
			continue;
		}
		t = pid > 0 ? task_of((int)pid) : NULL;
		if (!t)
			continue;
		t->group = seen && seen[t - tasks] && t->group != g ? 0 : g;
		if (seen)
			seen[t - tasks] = 1;
	}
}

/* Group g's tasks FIFO, made (over a plain file a writer made first, whose
 * pids are taken as moves) and opened. */
static void open_tasks(int g)
{
	char path[4096], buf[4096];
	struct stat st;

	group_path(g, "tasks", path, sizeof(path));
	if (!stat(path, &st) && S_ISREG(st.st_mode)) {
		if (!read_text(path, buf, sizeof(buf)))
			take_moves(buf, g, NULL);
		unlink(path);
	}
	if (mkfifo(path, 0666) && errno != EEXIST)
		return;
	chmod(path, 0666);
	groups[g].fd = open(path, O_RDONLY | O_NONBLOCK);
	groups[g].keep = open(path, O_WRONLY | O_NONBLOCK);
}

/* Group g's schemata; the pids its tasks FIFO received, as moves. */
static void scan_group(int g, int *seen)
{
	char path[4096], buf[8192];
	ssize_t n;

	group_path(g, "schemata", path, sizeof(path));
	if (!read_text(path, buf, sizeof(buf)))
		parse_schemata(buf, groups[g].mask);
	if (groups[g].fd < 0)
		return;
	while ((n = read(groups[g].fd, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		take_moves(buf, g, seen);
	}
}

/* The groups: the root and each directory but info (mkdir makes one). */
static void scan_groups(void)
{
	DIR *dir = opendir(root);
	struct dirent *e;
	int g;

	if (!dir)
		return;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "info") || e->d_type != DT_DIR)
			continue;
		for (g = 1; g < ngroups; g++)
			if (!strcmp(groups[g].name, e->d_name))
				break;
		if (g == ngroups && ngroups < MAX_GROUPS) {
			snprintf(groups[g].name, sizeof(groups[0].name), "%s", e->d_name);
			groups[g].fd = groups[g].keep = -1;
			ngroups++;
			open_tasks(g);
		}
	}
	closedir(dir);
}

/* The task's state and last CPU (fields 3 and 39 of /proc/PID/stat). */
static int task_cpu(int pid, char *state)
{
	char path[64], buf[1024], *p;
	int field, cpu = -1;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_text(path, buf, sizeof(buf)))
		return -1;
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	*state = p[2];
	for (field = 2, p++; *p && field < 39; p++)
		if (*p == ' ')
			field++;
	if (field == 39)
		cpu = atoi(p);
	return cpu;
}

static void set_ways(int cpu, uint64_t mask)
{
	cpu_set_t s;
	char path[4096], text[64 * 24];
	int c, used = 0, ok;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	ok = !sched_setaffinity(0, sizeof(s), &s) && sched_getcpu() == cpu;
	if (ok) {
		llcsim_op(LLCSIM_WAYS, mask == full_mask ? 0 : (uint32_t)mask);
		applied[cpu] = mask;
	}
	/* back to every CPU: the agent polls wherever there is room */
	CPU_ZERO(&s);
	for (c = 0; c < ncpus; c++)
		CPU_SET(c, &s);
	sched_setaffinity(0, sizeof(s), &s);
	if (!ok)
		return;
	for (c = 0; c < ncpus; c++)
		used += snprintf(text + used, sizeof(text) - (size_t)used, "%d %llx\n", c,
				 (unsigned long long)applied[c]);
	snprintf(path, sizeof(path), "%s/info/llcsim_applied", root);
	write_text(path, text);
}

/*
 * Each vCPU: the masks of the known tasks running there; a vCPU where no
 * known task last ran (they exited) goes back to the root group's mask;
 * one whose known tasks all sleep keeps its mask.
 */
static void apply(void)
{
	uint64_t want[MAX_CPUS] = { 0 };
	int i, c, known[MAX_CPUS] = { 0 };

	for (i = 0; i < ntasks; i++) {
		char state = '?';

		c = task_cpu(tasks[i].pid, &state);
		if (c < 0 || state == 'Z' || state == 'X') {	/* gone: forget it */
			tasks[i--] = tasks[--ntasks];
			continue;
		}
		if (c >= ncpus)
			continue;
		known[c] = 1;
		if (state == 'R')
			want[c] |= groups[tasks[i].group].mask[domain_of[c]];
	}
	for (c = 0; c < ncpus; c++) {
		if (!known[c])
			want[c] = groups[0].mask[domain_of[c]];
		if (want[c] && want[c] != applied[c])
			set_ways(c, want[c]);
	}
}

int resctrl_agent_start(const char *dir, int ways)
{
	pid_t pid;
	int c;

	root = dir;
	read_topology();
	if (make_tree(ways)) {
		fprintf(stderr, "llcsim resctrl: cannot make %s: %s\n", dir, strerror(errno));
		return 1;
	}
	ngroups = 1;
	groups[0].fd = groups[0].keep = -1;
	open_tasks(0);
	if (groups[0].fd < 0) {
		fprintf(stderr, "llcsim resctrl: cannot make %s/tasks: %s\n", dir, strerror(errno));
		return 1;
	}
	for (c = 0; c < ncpus; c++)
		applied[c] = full_mask;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0) {
		printf("LLCSIM-RESCTRL root=%s ways=%d cpus=%d agent=%d\n", dir, ways, ncpus, (int)pid);
		return 0;
	}
	setsid();
	for (;;) {
		struct pollfd pfd[MAX_GROUPS];
		int seen[MAX_TASKS] = { 0 }, g;

		/* wake on a move, or every POLL_US for new groups and migrations */
		for (g = 0; g < ngroups; g++) {
			pfd[g].fd = groups[g].fd;
			pfd[g].events = POLLIN;
		}
		poll(pfd, (nfds_t)ngroups, POLL_US / 1000);
		scan_groups();
		for (g = 0; g < ngroups; g++)
			scan_group(g, seen);
		apply();
	}
}
