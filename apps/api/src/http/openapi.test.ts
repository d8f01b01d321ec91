import swagger from '@fastify/swagger'
import Fastify from 'fastify'
import {
  validatorCompiler,
  type FastifyPluginAsyncZod,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod'
import { describe, expect, test } from 'vitest'
import { z } from 'zod'
import { jsonSerializerCompiler, openApiOptions } from './openapi.ts'
import { answer } from './route-answers.ts'

describe('answers are serialised without their response schemas', () => {
  test('a field the schema does not name is kept, and a value is not transformed', () => {
    const schema = z.object({ at: z.iso.datetime(), n: z.number().transform(String) })
    const serialize = jsonSerializerCompiler({
      schema,
      method: 'GET',
      url: '/x',
      httpStatus: '200',
    })
    const answer = { at: 'not a time', n: 1, extra: { kept: true } }
    expect(JSON.parse(serialize(answer))).toEqual(answer)
  })
})

/** The document of a server with one documented route and one under a hidden prefix. */
async function documentOf(routes: FastifyPluginAsyncZod): Promise<Record<string, any>> {
  const app = Fastify().withTypeProvider<ZodTypeProvider>()
  app.setValidatorCompiler(validatorCompiler)
  app.setSerializerCompiler(jsonSerializerCompiler)
  await app.register(swagger, openApiOptions(['/hidden']))
  await app.register(routes)
  await app.ready()
  const document = app.swagger() as Record<string, any>
  await app.close()
  return document
}

describe('the document integrators generate clients from', () => {
  test('names a relative server, a license and contact, and declares every tag with a description; an operation keeps its id, tag, summary and description', async () => {
    const document = await documentOf(async (app) => {
      app.get(
        '/v1/things/:thingId',
        {
          schema: {
            operationId: 'getThing',
            tags: ['Attempts'],
            summary: 'Read a thing',
            description: 'The thing as it stands.',
            params: z.strictObject({ thingId: z.string() }),
            response: { 200: answer('The thing', z.object({ thingId: z.string() })) },
          },
        },
        async (request) => ({ thingId: request.params.thingId }),
      )
      app.get('/hidden/page', async () => 'not documented')
    })

    // Relative: a client resolves it against the URL it fetched the document from.
    expect(document.servers).toEqual([{ url: '/', description: expect.any(String) }])
    expect(document.info.license).toEqual({
      name: 'UNLICENSED',
      identifier: expect.stringMatching(/^LicenseRef-[A-Za-z0-9.-]+$/),
    })
    expect(document.info.contact).toEqual({ name: expect.any(String) })
    const tags = document.tags as { name: string; description: string }[]
    expect(tags.map((t) => t.name)).toEqual([
      'Delegations',
      'Attempts',
      'Agents',
      'Artifacts',
      'Sessions',
      'Runs',
      'Continuations',
      'Webhooks',
      'Admin',
      'Dashboard',
      'Health',
    ])
    expect(tags.filter((t) => t.description.length < 20)).toEqual([])

    expect(Object.keys(document.paths)).toEqual(['/v1/things/{thingId}'])
    expect(document.paths['/v1/things/{thingId}'].get).toMatchObject({
      operationId: 'getThing',
      tags: ['Attempts'],
      summary: 'Read a thing',
      description: 'The thing as it stands.',
    })
  })
})
