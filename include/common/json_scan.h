/* "common/json_scan.h" is common/base/json_scan.h: the spelling stays, the file lives in its layer */
#include "../../common/base/json_scan.h"
