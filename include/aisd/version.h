/*
 * version.h - the version of aisd and aisctl, as printed by --version and
 * reported by GET /v1/daemon?what=stats.
 */
#ifndef AISD_VERSION_H
#define AISD_VERSION_H

#define AISD_VERSION "0.1.0"

#endif
