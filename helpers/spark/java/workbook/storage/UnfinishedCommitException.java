package workbook.storage;

import java.io.IOException;

/**
 * A commit recorded in DynamoDB whose file could not be written, from
 * {@link EndpointS3DynamoDBLogStore}. The message names the table, the version and the item, and
 * says whether this write committed and what to do. Delta does not retry it (it retries only a
 * {@code FileAlreadyExistsException}), and it is never a {@code FileNotFoundException}, which
 * Delta's listing would take for a missing log folder.
 */
public class UnfinishedCommitException extends IOException {
    UnfinishedCommitException(String message, Throwable cause) {
        super(message, cause);
    }
}
