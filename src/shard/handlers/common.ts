// The handler kit (context, replies, ownership checks, limits, rail effects) now lives below the handlers
// in src/shard/lifecycle/context.ts; this re-export keeps the shard's entry points importing it from here.
export * from '../lifecycle/context.ts';
