import { Command } from 'commander';
import type { Segment } from '../../../domain/segments/segment.schema.js';
import { listCommand, showCommand } from '../../listing.js';

/** `emk segments list|show`: the segments with their member counts, as GET /segments reads them. */
export function segmentsCommand(): Command {
  return new Command('segments')
    .description('segments of contacts')
    .addCommand(
      listCommand<Segment>({
        plural: 'segments',
        columns: [
          { heading: 'id', cell: (s) => s.id },
          { heading: 'name', cell: (s) => s.name },
          { heading: 'members', cell: (s) => s.member_count, numeric: true },
        ],
        list: (services, workspaceId, _options, paging) => services.segments.list(workspaceId, paging),
      }).exitOverride(),
    )
    .addCommand(showCommand({ singular: 'segment', get: (services, workspaceId, id) => services.segments.get(workspaceId, id) }).exitOverride());
}
