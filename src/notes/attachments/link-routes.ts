import { Hono } from "hono";
import { databaseOf } from "../../db/client";
import { describeRoute, jsonError } from "../../lib/describe";
import { allowedMethods, methodNotAllowed } from "../../lib/http";
import { noStore } from "../../lib/security-headers";
import type { AppEnv } from "../../types";
import { notesErrors } from "../docs";
import { attachmentNotFound, keepsNoCacheControl, needsAccounts } from "./answers";
import { attachmentIdParameter, attachmentNotFound as notFoundAnswer, downloadAnswers, rangeParameters } from "./docs";
import { linkProblem } from "./links";
import { AttachmentMessage } from "./messages";
import { serveAttachment } from "./serve";
import { linkedAttachment } from "./store";

/**
 * GET /attachments/{attachmentId}?expires=…&signature=…: a signed link's bytes, without any token (links.ts).
 * Mounted at the root by index.ts. Other pages' `<img>` may show it: its answer alone is a cross-origin
 * resource (every other answer of the API is same-origin only).
 */
export const attachmentLinks = new Hono<AppEnv>().use(noStore(keepsNoCacheControl)).get(
  "/:attachmentId",
  describeRoute({
    tags: ["notes"],
    security: [{}],
    summary: "An attachment through its signed link",
    description:
      "The `url` of an attachment: the same answer as its download, for `<img src>` and browser downloads, with no `Authorization`. " +
      "Valid ATTACHMENT_URL_TTL_SECONDS after it was handed out; any change to the id, `expires` or `signature` is a 403; " +
      "an attachment, note or account deleted since is a 404.",
    parameters: [
      attachmentIdParameter,
      { name: "expires", in: "query", required: true, description: "Unix seconds", schema: { type: "integer" } },
      { name: "signature", in: "query", required: true, description: "64 hex digits", schema: { type: "string" } },
      ...rangeParameters,
    ],
    responses: {
      ...downloadAnswers,
      "403": jsonError(
        "The link was changed, or has expired",
        AttachmentMessage.invalidLink,
        AttachmentMessage.expiredLink,
      ),
      "404": notFoundAnswer,
      "500": notesErrors["500"],
    },
  }),
  async (c) => {
    const { config, db } = c.var;
    if (config.notesAuth !== "required") return needsAccounts(c);
    const id = c.req.param("attachmentId");
    const problem = await linkProblem(
      config.jwtSecret,
      id,
      c.req.query("expires"),
      c.req.query("signature"),
      Date.now(),
    );
    if (problem)
      return c.json(
        { error: problem === "expired" ? AttachmentMessage.expiredLink : AttachmentMessage.invalidLink },
        403,
      );
    // A link may be opened before the nearest replica has the row (an <img> right after the upload, which
    // can send no bookmark): what a replica does not have, the primary is asked for.
    const found =
      (await linkedAttachment(db, id)) ??
      (await linkedAttachment(databaseOf(c.env.DB.withSession("first-primary")), id));
    if (!found) return attachmentNotFound(c);
    return serveAttachment(c, c.env.ATTACHMENTS, found, { "Cross-Origin-Resource-Policy": "cross-origin" });
  },
);

for (const [path, allow] of allowedMethods(attachmentLinks.routes)) attachmentLinks.all(path, methodNotAllowed(allow));
