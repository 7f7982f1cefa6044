/*-------------------------------------------------------------------------
 *
 * resctrl.c
 *		Confine weak-locality plans to a few L3 ways through resctrl, the
 *		hardware counterpart of MCC-DB's page colouring (section 6.1).
 *
 * Layout used (Documentation/arch/x86/resctrl.rst): info/L3/cbm_mask is the
 * full capacity bitmask in hex, info/L3/min_cbm_bits the fewest bits a mask
 * may have, schemata holds lines like "L3:0=fffff;1=fffff", a group is a
 * directory made with mkdir, and writing a pid to its tasks file moves the
 * task.  Not run on such hardware here: tested against a directory laid
 * out the same way.
 *
 * The weak group inherits: a group made with mkdir starts with the
 * kernel's defaults (all of every resource: no memory-bandwidth limit),
 * which would let a weak plan escape the limits of the group its backend
 * runs in.  So mccdb_resctrl_setup() copies every schemata line of a
 * parent group (the postmaster's) and narrows only the L3 line, to the
 * lowest ways of the parent's own mask in each domain: the weak group is
 * never allowed more of anything than its parent.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "resctrl.h"

static int	fail(char *err, size_t errlen, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

static int
fail(char *err, size_t errlen, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int
read_path(const char *path, char *buf, size_t len)
{
	FILE	   *f;
	size_t		n;

	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return 0;
}

static int
read_file(const char *root, const char *name, char *buf, size_t len)
{
	char		path[4096];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	return read_path(path, buf, len);
}

static int
write_file(const char *path, const char *text)
{
	FILE	   *f = fopen(path, "w");
	int			ok;

	if (f == NULL)
		return -1;
	ok = fputs(text, f) >= 0;
	if (fclose(f) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

/* "root/group/name", or "root/name" for the default group ("" or NULL). */
static void
group_path(char *path, size_t len, const char *root, const char *group,
		   const char *name)
{
	if (group == NULL || group[0] == '\0')
		snprintf(path, len, "%s/%s", root, name);
	else
		snprintf(path, len, "%s/%s/%s", root, group, name);
}

int
mccdb_resctrl_available(const char *root)
{
	char		buf[64];
	struct stat st;
	char		path[4096];

	snprintf(path, sizeof(path), "%s/schemata", root);
	return read_file(root, "info/L3/cbm_mask", buf, sizeof(buf)) == 0 &&
		stat(path, &st) == 0;
}

/*
 * The L3 line of a schemata ("L3:0=fffff;1=fffff"): its domain ids and
 * masks; how many.
 */
static int
l3_domains(const char *schemata, int *ids, unsigned long *masks, int max)
{
	const char *p = schemata;
	int			n = 0;

	/* a line whose first word is "L3:" (not L3CODE: or L3DATA:) */
	for (;;)
	{
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "L3:", 3) == 0)
			break;
		p = strchr(p, '\n');
		if (p == NULL)
			return 0;
		p++;
	}
	p += 3;
	while (*p && *p != '\n' && n < max)
	{
		char	   *end;
		long		id = strtol(p, &end, 10);

		if (end == p || *end != '=')
			break;
		ids[n] = (int) id;
		masks[n++] = strtoul(end + 1, &end, 16);
		p = strchr(end, ';');
		if (p == NULL)
			break;
		p++;
	}
	return n;
}

/* The lowest `ways` set bits of mask (fewer if it has fewer). */
static unsigned long
lowest_ways(unsigned long mask, int ways)
{
	unsigned long out = 0;
	int			bit;

	for (bit = 0; ways > 0 && bit < (int) (8 * sizeof(mask)); bit++)
		if (mask & (1UL << bit))
		{
			out |= 1UL << bit;
			ways--;
		}
	return out;
}

int
mccdb_resctrl_setup(const char *root, const char *group, int ways,
					const char *parent, char *err, size_t errlen)
{
	char		buf[4096];
	char		out[8192];
	char		path[4096];
	unsigned long full;
	int			bits = 0;
	int			min_bits = 1;
	int			ids[64];
	unsigned long masks[64];
	int			n,
				i;
	size_t		used = 0;
	const char *p;

	if (!mccdb_resctrl_available(root))
		return fail(err, errlen, "%s is not a resctrl mount with L3 allocation", root);
	if (read_file(root, "info/L3/cbm_mask", buf, sizeof(buf)) != 0)
		return fail(err, errlen, "cannot read %s/info/L3/cbm_mask: %s", root, strerror(errno));
	full = strtoul(buf, NULL, 16);
	for (; full >> bits; bits++)
		;
	if (read_file(root, "info/L3/min_cbm_bits", buf, sizeof(buf)) == 0)
		min_bits = atoi(buf) > 0 ? atoi(buf) : 1;
	if (ways < min_bits)
		ways = min_bits;
	if (ways <= 0 || ways >= bits)
		return fail(err, errlen, "cannot confine to %d of %d cache ways", ways, bits);

	group_path(path, sizeof(path), root, parent, "schemata");
	if (read_path(path, buf, sizeof(buf)) != 0)
		return fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
	n = l3_domains(buf, ids, masks, 64);
	if (n == 0)
		return fail(err, errlen, "no L3 line in %s", path);
	for (i = 0; i < n; i++)
		if (__builtin_popcountl(masks[i]) < ways)
			return fail(err, errlen,
						"the L3 mask %lx of domain %d in %s has fewer than %d ways",
						masks[i], ids[i], path, ways);

	/*
	 * Every line of the parent but its L3 line, as it is (leading blanks
	 * dropped: the kernel aligns the names when it shows them), then the
	 * weak L3 line.
	 */
	for (p = buf; *p; )
	{
		const char *eol = strchr(p, '\n');
		size_t		len = eol ? (size_t) (eol - p) : strlen(p);

		while (len > 0 && (*p == ' ' || *p == '\t'))
			p++, len--;
		if (len > 0 && strncmp(p, "L3:", 3) != 0 && used + len + 2 < sizeof(out))
		{
			memcpy(out + used, p, len);
			used += len;
			out[used++] = '\n';
		}
		if (eol == NULL)
			break;
		p = eol + 1;
	}
	used += snprintf(out + used, sizeof(out) - used, "L3:");
	for (i = 0; i < n && used < sizeof(out); i++)
		used += snprintf(out + used, sizeof(out) - used, "%s%d=%lx",
						 i ? ";" : "", ids[i], lowest_ways(masks[i], ways));
	if (used >= sizeof(out) - 1)
		return fail(err, errlen, "the schemata of %s is too long", path);
	strcat(out, "\n");

	snprintf(path, sizeof(path), "%s/%s", root, group);
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return fail(err, errlen, "cannot create resctrl group %s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/%s/schemata", root, group);
	if (write_file(path, out) != 0)
		return fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
	return 0;
}

/*
 * Does the tasks file path list pid?  -1 if it cannot be read.  Only a
 * regular file is read (resctrl's are): a tree laid out like resctrl may
 * use FIFOs (the simulator's guest agent), where a read would wait for a
 * writer and take its pids.
 */
static int
lists_pid(const char *path, pid_t pid)
{
	struct stat st;
	FILE	   *f;
	long		v;
	int			found = 0;

	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (f = fopen(path, "r")) == NULL)
		return -1;
	while (!found && fscanf(f, "%ld", &v) == 1)
		found = (v == (long) pid);
	fclose(f);
	return found;
}

/*
 * The monitoring group of ctrl (a control group, "" for the default one)
 * that lists pid, appended to group as "ctrl/mon_groups/name"; nothing is
 * appended if none does.
 */
static void
find_mon_group(const char *root, const char *ctrl, pid_t pid, char *group, size_t len)
{
	char		dir[4096];
	char		path[4096 + 300];	/* dir, a name, "/tasks" */
	DIR		   *d;
	struct dirent *e;

	group_path(dir, sizeof(dir), root, ctrl, "mon_groups");
	d = opendir(dir);
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL)
	{
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/tasks", dir, e->d_name);
		if (lists_pid(path, pid) == 1)
		{
			snprintf(group, len, "%s%smon_groups/%s",
					 ctrl, ctrl[0] ? "/" : "", e->d_name);
			break;
		}
	}
	closedir(d);
}

/*
 * What the kernel says in /proc/PID/cpu_resctrl_groups: "res:/" or
 * "res:NAME", then "mon:" or "mon:NAME".  0, or -1 if it has no such file
 * or resctrl is not mounted.
 */
static int
proc_group_of(pid_t pid, char *group, size_t len)
{
	char		path[64];
	char		buf[1024];
	char		res[512] = "";
	char		mon[512] = "";
	char	   *line;
	char	   *save;
	int			have_res = 0;

	snprintf(path, sizeof(path), "/proc/%d/cpu_resctrl_groups", (int) pid);
	if (read_path(path, buf, sizeof(buf)) != 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		if (strncmp(line, "res:", 4) == 0 && line[4] != '\0')
		{
			snprintf(res, sizeof(res), "%s", line[4] == '/' ? line + 5 : line + 4);
			have_res = 1;
		}
		else if (strncmp(line, "mon:", 4) == 0)
			snprintf(mon, sizeof(mon), "%s", line[4] == '/' ? line + 5 : line + 4);
	}
	if (!have_res)
		return -1;
	if (mon[0])
		snprintf(group, len, "%s%smon_groups/%s", res, res[0] ? "/" : "", mon);
	else
		snprintf(group, len, "%s", res);
	return 0;
}

#ifndef RDTGROUP_SUPER_MAGIC
#define RDTGROUP_SUPER_MAGIC 0x7655821
#endif

int
mccdb_resctrl_group_of(const char *root, pid_t pid, const char *skip,
					   char *group, size_t len, char *err, size_t errlen)
{
	struct statfs fs;
	char		path[4096];
	DIR		   *d;
	struct dirent *e;

	/*
	 * The kernel answers in one small read where it can: when root is the
	 * kernel's resctrl mount (its magic number) and it has
	 * /proc/PID/cpu_resctrl_groups (CONFIG_PROC_CPU_RESCTRL, Linux 5.0 and
	 * later).  That file describes the real mount only, so a tree that is
	 * merely laid out like one (the tests, the simulator's guest agent) is
	 * read instead, as are kernels without the file: a task is in the
	 * control group whose tasks file lists it, else in the default group;
	 * within it, in the monitoring group whose tasks file lists it.  The
	 * default group's own tasks file is never read (on a real mount it
	 * lists every other task of the machine).
	 */
	group[0] = '\0';
	if (statfs(root, &fs) == 0 && fs.f_type == RDTGROUP_SUPER_MAGIC &&
		proc_group_of(pid, group, len) == 0)
		return 0;

	d = opendir(root);
	if (d == NULL)
		return fail(err, errlen, "cannot read %s: %s", root, strerror(errno));
	while ((e = readdir(d)) != NULL)
	{
		struct stat st;

		if (e->d_name[0] == '.' || strcmp(e->d_name, "info") == 0 ||
			strcmp(e->d_name, "mon_groups") == 0 || strcmp(e->d_name, "mon_data") == 0 ||
			(skip && strcmp(e->d_name, skip) == 0))
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, e->d_name);
		if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		snprintf(path, sizeof(path), "%s/%s/tasks", root, e->d_name);
		if (lists_pid(path, pid) == 1)
		{
			snprintf(group, len, "%s", e->d_name);
			break;
		}
	}
	closedir(d);
	{
		char		ctrl[512];

		snprintf(ctrl, sizeof(ctrl), "%s", group);
		find_mon_group(root, ctrl, pid, group, len);
	}
	return 0;
}

int
mccdb_resctrl_move(const char *root, const char *group, pid_t pid,
				   char *err, size_t errlen)
{
	char		path[4096];
	char		text[32];

	group_path(path, sizeof(path), root, group, "tasks");
	snprintf(text, sizeof(text), "%d\n", (int) pid);
	if (write_file(path, text) != 0)
		return fail(err, errlen, "cannot move pid %d to %s: %s", (int) pid, path, strerror(errno));
	return 0;
}
