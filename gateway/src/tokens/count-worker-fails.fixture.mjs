// A stand-in for the token counter thread that cannot start (count.test.ts): as if its
// tokenizer failed to load.
throw new Error('fixture: the tokenizer did not load');
