/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

#ifndef __VTPU_URING_H__
#define __VTPU_URING_H__

struct io_uring_cmd;

int vtpu_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags);

#endif /* __VTPU_URING_H__ */
