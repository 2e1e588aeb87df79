/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Ledger internals shared with the `edgeq plan` command. */
#ifndef EDGEQ_LEDGER_INT_H
#define EDGEQ_LEDGER_INT_H

#include <edgeq/gguf.h>
#include <edgeq/ledger.h>

/*
 * The shape of an opened GGUF model: metadata keys of its architecture
 * (0 when absent), tensor sizes, and the usual defaults (head_dim =
 * n_embd / n_head, n_head_kv = n_head, n_vocab = embedding rows). Checks
 * nothing: the caller decides which fields it needs.
 */
void ledger_gguf_shape(const struct edgeq_gguf *g, struct edgeq_model_shape *s);

#endif
