import { ArrayMaxSize, IsArray, IsObject, IsOptional } from 'class-validator';
import { IsMetadata } from '../common/field-validators';

/** At most this many items in one create or items call, as at OpenAI. */
export const MAX_ITEMS_PER_CALL = 20;

/** `POST /v1/conversations`: initial items (checked by the Responses input reader) and metadata. */
export class CreateConversationDto {
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(MAX_ITEMS_PER_CALL)
  @IsObject({ each: true })
  items?: Array<Record<string, unknown>>;

  @IsOptional()
  @IsMetadata()
  metadata?: Record<string, string>;
}

/** `POST /v1/conversations/{id}`: the metadata that replaces the conversation's. */
export class UpdateConversationDto {
  @IsMetadata()
  metadata!: Record<string, string>;
}

/** `POST /v1/conversations/{id}/items`. */
export class AddConversationItemsDto {
  @IsArray()
  @ArrayMaxSize(MAX_ITEMS_PER_CALL)
  @IsObject({ each: true })
  items!: Array<Record<string, unknown>>;
}
