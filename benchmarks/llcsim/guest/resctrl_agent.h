/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The guest's resctrl-like tree whose schemata reach the plugin (resctrl_agent.c). */
#ifndef LLCSIM_RESCTRL_AGENT_H
#define LLCSIM_RESCTRL_AGENT_H

/* Where run.sh's guests keep it (mccdb.resctrl_path in the PostgreSQL guest). */
#define RESCTRL_AGENT_ROOT "/tmp/resctrl"

/* Make the tree under dir with ways-bit masks and start the agent in the
 * background; returns 0 in the caller once the tree exists. */
int resctrl_agent_start(const char *dir, int ways);

#endif
