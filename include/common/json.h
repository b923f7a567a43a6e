/* "common/json.h" is common/base/json.h: the spelling stays, the file lives in its layer */
#include "../../common/base/json.h"
