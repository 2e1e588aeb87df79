// SPDX-License-Identifier: LGPL-2.1-or-later
/* Weight sets (wset.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <edgeq/kq.h>

#include "placement/wset.h"

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static void slot_free(struct place_wslot *ws)
{
	munmap(ws->map, ws->bytes);
	close(ws->fd);
	free(ws->name);
}

/* Drop least recently used copies not used by this call until @need more
 * bytes fit the budget; -ENOSPC when they cannot. */
static int make_room(struct place_wset *s, uint64_t need)
{
	if (!s->budget)
		return 0;
	if (need > s->budget)
		return -ENOSPC;
	while (s->bytes + need > s->budget) {
		size_t v = s->n;

		for (size_t i = 0; i < s->n; i++)
			if (s->w[i].used != s->tick &&
			    (v == s->n || s->w[i].used < s->w[v].used))
				v = i;
		if (v == s->n)
			return -ENOSPC; /* all of them in use by this call */
		if (s->on_drop)
			s->on_drop(s->drop_arg, &s->w[v]);
		s->bytes -= s->w[v].bytes;
		slot_free(&s->w[v]);
		s->w[v] = s->w[--s->n];
		s->dropped++;
	}
	return 0;
}

void place_wset_set_budget(struct place_wset *s, uint64_t budget)
{
	s->budget = budget;
	place_wset_begin(s); /* no call holds a copy between calls */
	(void)make_room(s, 0);
}

int place_wset_get(struct place_wset *s, const struct edgeq_place_weight *w,
		   struct place_wslot **out, bool *created)
{
	uint64_t h = name_hash(w->name);
	struct place_wslot *ws;
	int ret;

	*created = false;
	for (size_t i = 0; i < s->n; i++) {
		ws = &s->w[i];
		if (ws->hash == h && !strcmp(ws->name, w->name)) {
			if (ws->bytes != w->bytes)
				return -EINVAL; /* one name, two tensors */
			ws->used = s->tick;
			*out = ws;
			return 0;
		}
	}
	ret = make_room(s, w->bytes);
	if (ret)
		return ret;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct place_wslot *nw = realloc(s->w, cap * sizeof(*nw));

		if (!nw)
			return -ENOMEM;
		s->w = nw;
		s->cap = cap;
	}
	ws = &s->w[s->n];
	memset(ws, 0, sizeof(*ws));
	ws->name = strdup(w->name);
	if (!ws->name)
		return -ENOMEM;
	ret = edgeq_kq_memfd("edgeq-weight", w->bytes, &ws->fd, &ws->map);
	if (ret) {
		free(ws->name);
		return ret;
	}
	memcpy(ws->map, w->data, w->bytes);
	ws->hash = h;
	ws->bytes = w->bytes;
	ws->id = ++s->next_id;
	ws->used = s->tick;
	s->n++;
	s->bytes += w->bytes;
	*out = ws;
	*created = true;
	return 0;
}

void place_wset_drop_last(struct place_wset *s)
{
	if (!s->n)
		return;
	s->n--;
	s->bytes -= s->w[s->n].bytes;
	slot_free(&s->w[s->n]);
}

void place_wset_fini(struct place_wset *s)
{
	for (size_t i = 0; i < s->n; i++)
		slot_free(&s->w[i]);
	free(s->w);
	memset(s, 0, sizeof(*s));
}
