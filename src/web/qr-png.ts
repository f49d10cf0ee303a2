/**
 * QR code PNGs: a payin's `qrcode.image` (B1, interface Area B) and a bank account's activation QR (`qr_image`,
 * Area C tokenize_bank_account). The `qrcode` library encodes the content (one byte-mode segment: a payment URI or URL
 * is byte mode almost throughout, and this skips the library's mode-splitting search), error correction M; the
 * picture is 4 pixels per module with a 4-module quiet zone, black on white, 8-bit grayscale, written by `pngjs`
 * with scanline filter 0.
 *
 * The grayscale pixels are laid out here from the module matrix, one row of modules at a time, so pngjs takes its
 * no-conversion path: the library's own renderer builds an RGBA image and converts every pixel back in JavaScript,
 * about two thirds of a payin creation's QR cost (bench `payins`).
 */
import { PNG } from 'pngjs';
import QRCode from 'qrcode';

/** Pixels per module and quiet-zone width in modules. */
export const QR_PIXELS_PER_MODULE = 4;
export const QR_QUIET_ZONE_MODULES = 4;

const WHITE = 255;
const BLACK = 0;
/** 8-bit grayscale in and out (pngjs's no-conversion path), scanline filter 0. */
const PNG_OPTIONS = { colorType: 0, inputColorType: 0, inputHasAlpha: false, bitDepth: 8, filterType: 0 } as const;

/**
 * Renders `content` as a QR code PNG.
 * @returns the PNG bytes: width = height = (modules + 2 × 4) × 4 pixels.
 * @throws Error when `content` does not fit in a QR code (more than 2,331 bytes at level M).
 */
export async function renderQrPng(content: string): Promise<Buffer> {
  const { modules } = QRCode.create([{ data: Buffer.from(content, 'utf8'), mode: 'byte' }], { errorCorrectionLevel: 'M' });
  const width = (modules.size + 2 * QR_QUIET_ZONE_MODULES) * QR_PIXELS_PER_MODULE;
  const pixels = Buffer.alloc(width * width, WHITE);
  const row = Buffer.alloc(width);
  for (let moduleRow = 0; moduleRow < modules.size; moduleRow += 1) {
    row.fill(WHITE);
    for (let column = 0; column < modules.size; column += 1) {
      if (!modules.get(moduleRow, column)) continue;
      const x = (column + QR_QUIET_ZONE_MODULES) * QR_PIXELS_PER_MODULE;
      row.fill(BLACK, x, x + QR_PIXELS_PER_MODULE);
    }
    const y = (moduleRow + QR_QUIET_ZONE_MODULES) * QR_PIXELS_PER_MODULE;
    for (let repeat = 0; repeat < QR_PIXELS_PER_MODULE; repeat += 1) row.copy(pixels, (y + repeat) * width);
  }
  const png = new PNG({ width, height: width });
  png.data = pixels;
  return PNG.sync.write(png, PNG_OPTIONS);
}
