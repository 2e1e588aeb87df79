/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small, bounds-checked walk over a GGUF file's header: metadata keys and
 * the tensor table, for the planner (shape, quantized size) and manifests
 * (tokenizer bytes, tensor types). Not the decoder's loader: it never reads
 * tensor data. Internal to libedgeq.
 */
#ifndef EDGEQ_LEDGER_GGUF_SCAN_H
#define EDGEQ_LEDGER_GGUF_SCAN_H

#include <stdint.h>

#include <edgeq/edgeq.h>

#define GGUF_SCAN_NTYPES 40

struct gguf_scan {
	const uint8_t *map; /* the file, mapped read-only */
	uint64_t size;
	uint32_t version;
	uint64_t n_tensors, n_kv;
	char arch[32];
	char name[128];
	uint32_t n_layer, n_embd, n_ff, n_head, n_head_kv, n_ctx, head_dim;
	uint32_t n_vocab;
	uint64_t n_params;
	uint64_t weight_bytes; /* all tensor data */
	uint64_t embd_bytes;   /* token_embd.weight */
	uint64_t embd_rows;
	int has_output; /* output.weight present (untied) */
	uint32_t type_counts[GGUF_SCAN_NTYPES];
	uint8_t tokenizer_sha256
		[32]; /* over every tokenizer.* key/value, in file order */
	uint32_t tokenizer_keys;
};

/* Map and walk @path. Returns 0, or -errno with a message naming the field
 * and its offset. */
int gguf_scan_open(const char *path, struct gguf_scan *g,
		   struct edgeq_error *err);
void gguf_scan_close(struct gguf_scan *g);
/* "Q4_K" for a ggml type id, NULL when unknown. */
const char *gguf_type_name(uint32_t type);

#endif
