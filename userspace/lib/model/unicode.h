/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unicode character properties for the tokenizers, from the table that
 * tools/gen-unicode-table generates out of the Unicode Character Database
 * (unicode_table.c): the major general category and White_Space.
 */
#ifndef EDGEQ_MODEL_UNICODE_H
#define EDGEQ_MODEL_UNICODE_H

#include <stdint.h>

enum ucd_flag {
	UCD_L = 0x01,  /* letter */
	UCD_N = 0x02,  /* number */
	UCD_P = 0x04,  /* punctuation */
	UCD_M = 0x08,  /* mark */
	UCD_S = 0x10,  /* symbol */
	UCD_Z = 0x20,  /* separator */
	UCD_C = 0x40,  /* other: control, format, unassigned, private use */
	UCD_WS = 0x80, /* White_Space */
};

/* Flags of @cp (0 above U+10FFFF). */
uint8_t ucd_flags(uint32_t cp);
/* The simple lowercase mapping of @cp (itself when it has none). */
uint32_t ucd_tolower(uint32_t cp);

extern const uint32_t ucd_ranges[];
extern const unsigned int ucd_n_ranges;
extern const uint8_t ucd_ascii[128];
extern const uint32_t ucd_lower[][2];
extern const unsigned int ucd_n_lower;

#endif /* EDGEQ_MODEL_UNICODE_H */
