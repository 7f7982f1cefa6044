/*
 * Unit test of resctrl.c against a directory laid out like /sys/fs/resctrl.
 * Prints TAP.  (No CAT/L3-QoS hardware here: this is how far it can be run.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../resctrl.h"
#include "../tap.h"


static void
put(const char *root, const char *name, const char *text)
{
	char		path[4096];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static char *
get(const char *root, const char *name)
{
	static char buf[4096];
	char		path[4096];
	FILE	   *f;
	size_t		len;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

int
main(void)
{
	char		root[] = "/tmp/mccdb-resctrl-XXXXXX";
	char		path[4096];
	char		err[256];
	char	   *s;

	printf("TAP version 13\n");
	if (!mkdtemp(root))
		return 1;

	ok(!mccdb_resctrl_available(root), "an empty directory is not resctrl");
	ok(mccdb_resctrl_setup(root, "mccdb_weak", 2, "", err, sizeof(err)) != 0 &&
	   strstr(err, "not a resctrl mount") != NULL, "setup on it fails with a clear message");

	snprintf(path, sizeof(path), "%s/info", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/info/L3", root);
	mkdir(path, 0755);
	put(root, "info/L3/cbm_mask", "fff\n");
	put(root, "info/L3/min_cbm_bits", "1\n");
	put(root, "schemata", "    MB:0=100;1=100\n    L3:0=fff;1=fff\n");
	put(root, "tasks", "");
	ok(mccdb_resctrl_available(root), "a resctrl-like layout is recognised");

	ok(mccdb_resctrl_setup(root, "mccdb_weak", 2, "", err, sizeof(err)) == 0, "group is set up");
	s = get(root, "mccdb_weak/schemata");
	ok(s && strcmp(s, "MB:0=100;1=100\nL3:0=3;1=3\n") == 0,
	   "group schemata: the default group's MB line, lowest 2 ways in both L3 domains");
	ok(mccdb_resctrl_setup(root, "mccdb_weak", 3, NULL, err, sizeof(err)) == 0 &&
	   strcmp(get(root, "mccdb_weak/schemata"), "MB:0=100;1=100\nL3:0=7;1=7\n") == 0,
	   "setting up again reuses the group and rewrites its mask");
	ok(mccdb_resctrl_setup(root, "mccdb_weak", 12, "", err, sizeof(err)) != 0 &&
	   strstr(err, "12 of 12") != NULL, "all ways cannot be a confinement");

	put(root, "info/L3/min_cbm_bits", "2\n");
	ok(mccdb_resctrl_setup(root, "mccdb_weak", 1, "", err, sizeof(err)) == 0 &&
	   strcmp(get(root, "mccdb_weak/schemata"), "MB:0=100;1=100\nL3:0=3;1=3\n") == 0,
	   "fewer ways than min_cbm_bits are raised to it");
	put(root, "info/L3/min_cbm_bits", "1\n");

	/* the DBA's group pg: half the bandwidth, the upper ways */
	snprintf(path, sizeof(path), "%s/pg", root);
	mkdir(path, 0755);
	put(root, "pg/schemata", "    MB:0= 50;1= 50\n    L3:0=ff0;1=f00\n");
	put(root, "pg/tasks", "17\n4242\n");
	ok(mccdb_resctrl_setup(root, "mccdb_weak", 2, "pg", err, sizeof(err)) == 0 &&
	   strcmp(get(root, "mccdb_weak/schemata"), "MB:0= 50;1= 50\nL3:0=30;1=300\n") == 0,
	   "the weak group inherits its parent's bandwidth limit and takes the lowest of its ways");
	ok(mccdb_resctrl_setup(root, "mccdb_weak", 5, "pg", err, sizeof(err)) != 0 &&
	   strstr(err, "fewer than 5 ways") != NULL,
	   "more ways than the parent has are refused, not widened");
	ok(mccdb_resctrl_setup(root, "mccdb_weak", 2, "nogroup", err, sizeof(err)) != 0 &&
	   strstr(err, "nogroup/schemata") != NULL, "a parent without a schemata is refused");

	/* which group a task is in */
	ok(mccdb_resctrl_group_of(root, 4242, "mccdb_weak", path, sizeof(path), err, sizeof(err)) == 0 &&
	   strcmp(path, "pg") == 0, "a task listed by pg/tasks is in pg");
	ok(mccdb_resctrl_group_of(root, 99, "mccdb_weak", path, sizeof(path), err, sizeof(err)) == 0 &&
	   strcmp(path, "") == 0, "a task no group lists is in the default group");
	put(root, "mccdb_weak/tasks", "99\n");
	ok(mccdb_resctrl_group_of(root, 99, "mccdb_weak", path, sizeof(path), err, sizeof(err)) == 0 &&
	   strcmp(path, "") == 0, "the skipped group is not looked in");
	snprintf(path, sizeof(path), "%s/pg/mon_groups", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/pg/mon_groups/m1", root);
	mkdir(path, 0755);
	put(root, "pg/mon_groups/m1/tasks", "4242\n");
	ok(mccdb_resctrl_group_of(root, 4242, "mccdb_weak", path, sizeof(path), err, sizeof(err)) == 0 &&
	   strcmp(path, "pg/mon_groups/m1") == 0, "and within it, in its monitoring group");
	snprintf(path, sizeof(path), "%s/mon_groups", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/mon_groups/m0", root);
	mkdir(path, 0755);
	put(root, "mon_groups/m0/tasks", "99\n");
	ok(mccdb_resctrl_group_of(root, 99, "mccdb_weak", path, sizeof(path), err, sizeof(err)) == 0 &&
	   strcmp(path, "mon_groups/m0") == 0, "a monitoring group of the default group");

	snprintf(path, sizeof(path), "%s/fifo", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/fifo/tasks", root);
	mkfifo(path, 0644);
	ok(mccdb_resctrl_group_of(root, 12345, "mccdb_weak", path, sizeof(path), err, sizeof(err)) == 0 &&
	   strcmp(path, "") == 0, "a tasks file that is a FIFO (the simulator's agent) is not read");

	ok(mccdb_resctrl_move(root, "mccdb_weak", 4242, err, sizeof(err)) == 0 &&
	   strcmp(get(root, "mccdb_weak/tasks"), "4242\n") == 0, "a pid moves into the group");
	ok(mccdb_resctrl_move(root, "pg/mon_groups/m1", 4242, err, sizeof(err)) == 0 &&
	   strcmp(get(root, "pg/mon_groups/m1/tasks"), "4242\n") == 0, "and back to the group it was in");
	ok(mccdb_resctrl_move(root, NULL, 4242, err, sizeof(err)) == 0 &&
	   strcmp(get(root, "tasks"), "4242\n") == 0 &&
	   mccdb_resctrl_move(root, "", 4243, err, sizeof(err)) == 0 &&
	   strcmp(get(root, "tasks"), "4243\n") == 0, "NULL and \"\" are the default group");
	ok(mccdb_resctrl_move("/nonexistent-mccdb", "g", 1, err, sizeof(err)) != 0 &&
	   strstr(err, "cannot move pid 1") != NULL, "a failed move says which pid and where");

	snprintf(path, sizeof(path), "rm -rf '%s'", root);
	if (system(path) != 0)
		return 1;
	return tap_done();
}
