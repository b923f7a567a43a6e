/*
 * cli_yaml - decoctl's output: JSON trees written as YAML or indented JSON
 * (-o yaml|json).  Reading YAML is common/yaml.h.
 */
#ifndef DECOD_CLI_YAML_H
#define DECOD_CLI_YAML_H

#include <stddef.h>
#include <stdio.h>
#include <yajl/yajl_tree.h>

#include "common/util.h"
#include "common/yaml.h"

/*
 * cli_print_yaml - write v as a YAML document to out (block style; strings
 * that would read back as something else are quoted).  0 or -1.
 */
int cli_print_yaml(FILE *out, yajl_val v);

/* cli_print_json - write v as indented JSON and a newline; 0 or -1 */
int cli_print_json(FILE *out, yajl_val v);

#endif
