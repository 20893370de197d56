// Child process of logger.test.ts: logs through the default (buffered stdout) destination.
// LOGGER_FIXTURE=exit logs and exits at once; =wait logs, then stays alive until stdin closes.
import { createLogger } from './logger.js';

const logger = createLogger({ service: 'fixture', level: 'info' });
logger.info({ n: 1 }, 'first line');
logger.info({ n: 2 }, 'second line');
if (process.env.LOGGER_FIXTURE === 'exit') process.exit(0);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
