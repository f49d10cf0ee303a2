/**
 * QR code PNGs: a payin's `qrcode.image` (B1, interface Area B) and a bank account's activation QR (`qr_image`,
 * Area C tokenize_bank_account), rendered by the `qrcode` library: one
 * byte-mode segment (a payment URI or URL is byte mode almost throughout; this skips the library's mode-splitting search,
 * a third of its cost), error correction M, 4 pixels per module, a 4-module quiet zone, black on white.
 * The PNG is written by the library's renderer (pngjs) as 8-bit grayscale with scanline filter 0: the default RGBA
 * image with adaptive filtering costs twice the CPU (about 8 ms against 4 ms per payin, bench `payins`) for
 * a smaller file of the same picture. It stays in the library on purpose (no PNG encoder of our own).
 */
import QRCode from 'qrcode';

/** Pixels per module and quiet-zone width in modules. */
export const QR_PIXELS_PER_MODULE = 4;
export const QR_QUIET_ZONE_MODULES = 4;

/**
 * Renders `content` as a QR code PNG.
 * @returns the PNG bytes: width = height = (modules + 2 × 4) × 4 pixels.
 * @throws Error when `content` does not fit in a QR code (more than 2,331 bytes at level M).
 */
export async function renderQrPng(content: string): Promise<Buffer> {
  return QRCode.toBuffer([{ data: Buffer.from(content, 'utf8'), mode: 'byte' }], {
    type: 'png',
    errorCorrectionLevel: 'M',
    scale: QR_PIXELS_PER_MODULE,
    margin: QR_QUIET_ZONE_MODULES,
    // pngjs options: grayscale, no per-line filter search.
    rendererOpts: { filterType: 0, colorType: 0 } as QRCode.QRCodeToBufferOptions['rendererOpts'],
  });
}
