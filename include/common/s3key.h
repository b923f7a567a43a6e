/* "common/s3key.h" is common/base/s3key.h: the spelling stays, the file lives in its layer */
#include "../../common/base/s3key.h"
