// The processor of artillery-echo.yml (bench/clients.sh): every virtual user loops until the
// bench creates the file WSBENCH_STOP_FILE (after its measuring window), so all users stop
// together and Artillery still writes its report; or, failing that, until WSBENCH_SECONDS
// have passed since the processor was loaded. Artillery opens connections slowly while it
// already runs the loop on the open ones, so a fixed run time would not fit every count.
// The file is looked for at most every 100 ms, not per message, to add little to its CPU.
'use strict';
const fs = require('fs');

const deadline = Date.now() + 1000 * Number(process.env.WSBENCH_SECONDS);
const stopFile = process.env.WSBENCH_STOP_FILE;
let checkedAt = 0;
let stopped = false;

module.exports = {
  keepGoing(context, next) {
    const now = Date.now();
    if (!stopped && now - checkedAt >= 100) {
      checkedAt = now;
      stopped = now >= deadline || fs.existsSync(stopFile);
    }
    return next(!stopped);
  },
};
