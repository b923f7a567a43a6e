/* "common/manifest.h" is common/base/manifest.h: the spelling stays, the file lives in its layer */
#include "../../common/base/manifest.h"
