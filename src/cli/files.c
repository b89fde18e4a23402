/* files.c — the model files a subcommand names: the tensor directory over the opened host
 * files, and the cleanup of both (inspect, quantize). */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "host/hostfile.h"
#include "formats/tensors.h"

ox_model_files *cli_files_open(const char *cmd, const int *files, int n) {
    ox_err err = {0};
    ox_model_files *mf = ox_files_open(files, n, &err);
    if (!mf) fprintf(stderr, "%s: %s: %s\n", cmd, ox_err_code_name(err.code), err.msg);
    return mf;
}

void cli_files_close(ox_model_files *mf, int *files, int n) {
    ox_files_free(mf);
    for (int i = 0; i < n; i++) ox_host_close(files[i]);
    free(files);
}
