/* version: sonde's version and the report.json schema version. */
#ifndef SONDE_VERSION_H
#define SONDE_VERSION_H

#define SONDE_VERSION "0.1.0"
/* report.json: keys are only ever added; bump when a key is added. */
#define REPORT_SCHEMA_VERSION 1

#endif
