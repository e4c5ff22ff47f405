import { z } from 'zod';

/**
 * Tools written with zod the way agent code writes them, using the keywords that used to be
 * refused: bounds, formats, patterns, records and discriminated unions.
 */
export const ZOD_TOOLS = {
  create_user: {
    description: 'Create a user account',
    schema: z.object({
      email: z.email(),
      name: z.string().min(1).max(40),
      age: z.number().int().positive().max(130),
      homepage: z.url().nullable(),
      team: z.uuid(),
    }),
  },
  schedule_meeting: {
    description: 'Schedule a meeting',
    schema: z.object({
      title: z.string().min(3),
      starts: z.iso.datetime(),
      day: z.iso.date(),
      minutes: z.number().int().min(15).max(480).multipleOf(15),
      attendees: z.array(z.email()).min(1).max(5),
    }),
  },
  set_labels: {
    description: 'Set labels on an issue',
    schema: z.object({
      issue: z.number().int().nonnegative(),
      labels: z.record(z.string().regex(/^[a-z][a-z0-9-]{0,15}$/), z.boolean()),
      priority: z.enum(['low', 'medium', 'high']).nullable(),
    }),
  },
  draw_shape: {
    description: 'Draw a shape',
    schema: z.object({
      shape: z.discriminatedUnion('kind', [
        z.object({ kind: z.literal('circle'), radius: z.number().positive() }),
        z.object({ kind: z.literal('rect'), width: z.number().min(1), height: z.number().min(1) }),
      ]),
      colour: z.string().regex(/^#[0-9a-f]{6}$/),
    }),
  },
  lookup_host: {
    description: 'Look up a host',
    schema: z.object({
      host: z
        .string()
        .regex(/^[a-z0-9.-]+$/)
        .max(60),
      address: z.ipv4(),
      port: z.number().int().gte(1).lte(65535),
    }),
  },
} as const;
